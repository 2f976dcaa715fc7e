#include "base/file_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace msgx {
namespace {

TEST(FileLockTest, SecondHolderIsRefusedNamingThePidUntilTheFirstReleases) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("msgx-lock-" + std::to_string(::getpid())))
          .string();
  auto first = FileLock::TryAcquire(path);
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = FileLock::TryAcquire(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().error_class(), ErrorClass::kInfra);
  EXPECT_NE(second.status().message().find("pid " + std::to_string(::getpid())), std::string::npos)
      << second.status().message();
  first.value().reset();
  auto third = FileLock::TryAcquire(path);
  EXPECT_TRUE(third.ok()) << third.status().ToString();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace msgx
