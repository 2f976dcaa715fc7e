// CountCadence (stream/service/count_cadence.h): a count is due a period
// after the last one started, or, when it took long, the ratio times its
// duration after it ended.
#include "stream/service/count_cadence.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace msgx {
namespace {

constexpr std::int64_t kSecond = 1'000'000;
constexpr std::int64_t kMs = 1'000;

TEST(CountCadenceTest, TheFirstCountIsDueAtOnce) {
  CountCadence c(kSecond, 50);
  EXPECT_TRUE(c.Due(0));
  EXPECT_TRUE(c.Due(-5));
  EXPECT_EQ(c.next(), -1);
}

TEST(CountCadenceTest, AQuickCountIsRepeatedEveryPeriod) {
  CountCadence c(kSecond, 50);
  c.Counted(10 * kSecond, 10 * kSecond + 2 * kMs);  // 2 ms: 100 ms by cost
  EXPECT_EQ(c.next(), 11 * kSecond);
  EXPECT_FALSE(c.Due(11 * kSecond - 1));
  EXPECT_TRUE(c.Due(11 * kSecond));
}

TEST(CountCadenceTest, ASlowCountWaitsTheRatioOfItsDurationAfterItEnded) {
  CountCadence c(kSecond, 50);
  // 70 ms (a million pending events): due 50 x 70 ms = 3.5 s after its end.
  c.Counted(10 * kSecond, 10 * kSecond + 70 * kMs);
  EXPECT_EQ(c.next(), 10 * kSecond + 70 * kMs + 3'500 * kMs);
  EXPECT_FALSE(c.Due(13 * kSecond));
  EXPECT_TRUE(c.Due(c.next()));
  // The backlog drains and the next count is quick again: back to the
  // period.
  const std::int64_t t = c.next();
  c.Counted(t, t + kMs);
  EXPECT_EQ(c.next(), t + kSecond);
}

TEST(CountCadenceTest, AtTheBoundaryThePeriodAndTheCostAgree) {
  CountCadence c(kSecond, 50);
  // 1 s / 51 after the start is 50 of its durations after the end.
  const std::int64_t d = kSecond / 51;
  c.Counted(0, d);
  EXPECT_EQ(c.next(), std::max(kSecond, d + 50 * d));
}

}  // namespace
}  // namespace msgx
