// WatchdogPinger with a manual clock: when WATCHDOG=1 is sent.
#include "base/watchdog.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class WatchdogPingerTest : public ::testing::Test {
 protected:
  WatchdogPinger Make(std::chrono::microseconds interval) {
    return WatchdogPinger(interval, &clock_, [this] { ++pings_; });
  }
  ManualClock clock_{1'700'000'000'000'000};
  int pings_ = 0;
};

TEST_F(WatchdogPingerTest, PingsAtOnceThenAtHalfTheInterval) {
  WatchdogPinger w = Make(seconds(10));
  EXPECT_TRUE(w.enabled());
  EXPECT_EQ(w.UntilDue(), milliseconds(0));
  EXPECT_TRUE(w.Tick(true));
  EXPECT_EQ(pings_, 1);
  EXPECT_EQ(w.UntilDue(), milliseconds(5'000));
  clock_.Advance(milliseconds(4'999));
  EXPECT_FALSE(w.Tick(true));
  EXPECT_EQ(w.UntilDue(), milliseconds(1));
  clock_.Advance(milliseconds(1));
  EXPECT_TRUE(w.Tick(true));
  EXPECT_EQ(pings_, 2);
  EXPECT_EQ(w.UntilDue(), milliseconds(5'000));
}

// A hung runner gets no ping; the caller checks again at a tenth of the
// interval, and the first check that finds it alive pings at once.
TEST_F(WatchdogPingerTest, NoPingWhileNotAliveAndAPingAtOnceWhenAliveAgain) {
  WatchdogPinger w = Make(seconds(10));
  EXPECT_TRUE(w.Tick(true));
  clock_.Advance(seconds(5));
  EXPECT_FALSE(w.Tick(false));
  EXPECT_EQ(w.UntilDue(), milliseconds(1'000));
  clock_.Advance(seconds(1));
  EXPECT_FALSE(w.Tick(false));
  EXPECT_EQ(pings_, 1);
  clock_.Advance(milliseconds(300));
  EXPECT_TRUE(w.Tick(true));
  EXPECT_EQ(pings_, 2);
  EXPECT_EQ(w.UntilDue(), milliseconds(5'000));
}

TEST_F(WatchdogPingerTest, WithoutAnIntervalNothingIsEverSent) {
  WatchdogPinger w = Make(std::chrono::microseconds(0));
  EXPECT_FALSE(w.enabled());
  EXPECT_FALSE(w.Tick(true));
  clock_.Advance(seconds(3'600));
  EXPECT_FALSE(w.Tick(true));
  EXPECT_EQ(pings_, 0);
  EXPECT_EQ(w.UntilDue(), std::chrono::hours(1));
}

}  // namespace
}  // namespace msgx
