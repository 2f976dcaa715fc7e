#include "stream/capture/poll_cadence.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

TEST(PollCadenceTest, RowsFlowingPollAtTheBusyInterval) {
  PollCadence c(Millis{10}, Millis{1000});
  EXPECT_EQ(c.Next(true), Millis{10});
  EXPECT_EQ(c.Next(true), Millis{10});
}

TEST(PollCadenceTest, EmptyPollsRightAfterRowsStayAtTheBusyInterval) {
  PollCadence c(Millis{10}, Millis{1000});
  EXPECT_EQ(c.Next(true), Millis{10});
  for (int i = 0; i < PollCadence::kBusyEmptyPolls; ++i) EXPECT_EQ(c.Next(false), Millis{10}) << i;
  EXPECT_EQ(c.Next(false), Millis{20});
  // Rows again: the busy polls after them are counted afresh.
  EXPECT_EQ(c.Next(true), Millis{10});
  for (int i = 0; i < PollCadence::kBusyEmptyPolls; ++i) EXPECT_EQ(c.Next(false), Millis{10}) << i;
  EXPECT_EQ(c.Next(false), Millis{20});
}

TEST(PollCadenceTest, EmptyPollsDoubleFromBusyUpToIdle) {
  PollCadence c(Millis{10}, Millis{1000});
  EXPECT_EQ(c.Next(true), Millis{10});
  for (int i = 0; i < PollCadence::kBusyEmptyPolls; ++i) c.Next(false);
  EXPECT_EQ(c.Next(false), Millis{20});
  EXPECT_EQ(c.Next(false), Millis{40});
  for (int i = 0; i < 4; ++i) c.Next(false);  // 80 .. 640
  EXPECT_EQ(c.Next(false), Millis{1000});
  EXPECT_EQ(c.Next(false), Millis{1000});
  EXPECT_EQ(c.Next(true), Millis{10});  // rows again: fast at once
}

TEST(PollCadenceTest, AQuietStartPollsAtIdle) {
  PollCadence c(Millis{10}, Millis{1000});
  EXPECT_EQ(c.Next(false), Millis{1000});
}

TEST(PollCadenceTest, BusyIsBoundedByIdleAndByOneMillisecond) {
  PollCadence slow(Millis{5000}, Millis{1000});
  EXPECT_EQ(slow.Next(true), Millis{1000});
  PollCadence zero(Millis{0}, Millis{1000});
  EXPECT_EQ(zero.Next(true), Millis{1});
  for (int i = 0; i < PollCadence::kBusyEmptyPolls; ++i) EXPECT_EQ(zero.Next(false), Millis{1});
  EXPECT_EQ(zero.Next(false), Millis{2});
}

}  // namespace
}  // namespace msgx
