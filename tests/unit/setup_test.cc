#include "app/setup.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "state/store_memory.h"
#include "tests/support/block_cache_capacity.h"

namespace msgx::app {
namespace {

// Every command starts with LoadAndInit, so refold, inspect and backup open
// their stores under the same block cache bound as `msgx run`
// (docs/operations.md#memory).
TEST(SetupTest, SizesTheBlockCacheFromTheConfiguration) {
  msgx::testing::BlockCacheCapacityRestorer restorer;
  const std::filesystem::path path = std::filesystem::temp_directory_path() /
                                     ("msgx-setup-test-" + std::to_string(::getpid()) + ".yaml");
  std::ofstream(path) << "msgx:\n  state:\n    block-cache-mb: 9\n";

  GlobalOptions global;
  global.config_path = path.string();
  global.log_level = "off";
  ASSERT_TRUE(LoadAndInit(global).ok());
  EXPECT_EQ(SharedBlockCache()->GetCapacity(), std::size_t{9} << 20);

  std::ofstream(path) << "msgx:\n  state:\n    block-cache-mb: 12\n";
  ASSERT_TRUE(LoadAndInit(global).ok());
  EXPECT_EQ(SharedBlockCache()->GetCapacity(), std::size_t{12} << 20);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace msgx::app
