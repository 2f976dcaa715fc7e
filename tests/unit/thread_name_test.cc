#include "base/thread_name.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

namespace msgx {
namespace {

// What the thread set is what the kernel reports back, cut to 15 bytes.
TEST(ThreadNameTest, ANameIsKeptAndALongOneIsCutTo15Bytes) {
  std::string short_name;
  std::string long_name;
  std::thread t([&] {
    char buf[kMaxThreadName + 1];
    SetCurrentThreadName("msgx:fold");
    short_name.assign(buf, CurrentThreadName(buf));
    SetCurrentThreadName("msgx:KAFKA:schd-and-more");
    long_name.assign(buf, CurrentThreadName(buf));
  });
  t.join();
  EXPECT_EQ(short_name, "msgx:fold");
  EXPECT_EQ(long_name, "msgx:KAFKA:schd");
}

}  // namespace
}  // namespace msgx
