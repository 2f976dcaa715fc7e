#include "stream/service/poll_loop.h"

#include <gtest/gtest.h>

#include <vector>

namespace msgx {
namespace {

using std::chrono::milliseconds;

// Every test stops the stopper from inside a step, so no wait ever blocks.
TEST(PollLoopTest, RepeatsAtOnceWhileMoreAndStopsCleanly) {
  Stopper stopper;
  int calls = 0;
  Status s = RunPollLoop(
      [&]() -> Result<bool> {
        if (++calls == 3) stopper.Stop();
        return true;
      },
      PollLoopOptions{"test", milliseconds(1000), milliseconds(30'000)}, &stopper);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(calls, 3);
}

TEST(PollLoopTest, OutageIsAStallThatEndsWhenTheSourceIsBack) {
  Stopper stopper;
  PollLoopHealth health;
  std::vector<bool> stalled_seen;
  int calls = 0;
  Status s = RunPollLoop(
      [&]() -> Result<bool> {
        ++calls;
        stalled_seen.push_back(health.stalled);
        if (calls == 1) {
          stopper.Notify();  // so the backoff wait returns at once
          return Status::Infra("mailbox down");
        }
        stopper.Stop();
        return false;
      },
      PollLoopOptions{"test", milliseconds(1000), milliseconds(1000)}, &stopper, &health);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(stalled_seen, (std::vector<bool>{false, true}));
  EXPECT_FALSE(health.stalled);
  EXPECT_EQ(health.stalls, 1);
}

TEST(PollLoopTest, NonInfraFailureEndsTheLoop) {
  Stopper stopper;
  Status s = RunPollLoop([&]() -> Result<bool> { return Status::Internal("corrupt log"); },
                         PollLoopOptions{"test", milliseconds(1000), milliseconds(1000)}, &stopper);
  EXPECT_EQ(s.error_class(), ErrorClass::kInternal);
}

TEST(PollLoopTest, BackoffDoublesFromThePollIntervalUpToTheCap) {
  PollLoopOptions o{"test", milliseconds(1000), milliseconds(30'000)};
  EXPECT_EQ(PollBackoff(o, 1), milliseconds(1000));
  EXPECT_EQ(PollBackoff(o, 2), milliseconds(2000));
  EXPECT_EQ(PollBackoff(o, 5), milliseconds(16'000));
  EXPECT_EQ(PollBackoff(o, 6), milliseconds(30'000));
  EXPECT_EQ(PollBackoff(o, 1000), milliseconds(30'000));
}

}  // namespace
}  // namespace msgx
