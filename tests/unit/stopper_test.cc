#include "base/stopper.h"

#include <gtest/gtest.h>

#include <thread>

namespace msgx {
namespace {

using std::chrono::milliseconds;

TEST(StopperTest, StopEndsAWaitAtOnceAndStaysStopped) {
  Stopper s;
  std::thread t([&s] { s.Stop(); });
  // An hour-long wait that the other thread cuts short.
  EXPECT_FALSE(s.WaitFor(milliseconds(3'600'000)));
  t.join();
  EXPECT_TRUE(s.stopped());
  EXPECT_FALSE(s.WaitFor(milliseconds(3'600'000)));
}

TEST(StopperTest, NotifyBeforeTheWaitIsNotLost) {
  Stopper s;
  s.Notify();
  EXPECT_TRUE(s.WaitFor(milliseconds(3'600'000)));  // returns at once
  EXPECT_FALSE(s.stopped());
}

TEST(StopperTest, StopReachesLinkedChildrenButNotifyDoesNot) {
  Stopper parent, child, late;
  parent.Link(&child);
  parent.Notify();
  EXPECT_FALSE(child.stopped());
  std::thread t([&parent] { parent.Stop(); });
  EXPECT_FALSE(child.WaitFor(milliseconds(3'600'000)));  // woken by the parent's Stop
  t.join();
  parent.Link(&late);  // linked after the stop: stopped at once
  EXPECT_TRUE(late.stopped());
}

}  // namespace
}  // namespace msgx
