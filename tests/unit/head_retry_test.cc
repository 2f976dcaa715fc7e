#include "stream/fold/head_retry.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace msgx {
namespace {

using std::chrono::seconds;
constexpr MicrosSinceEpoch kT0 = 1'796'000'000'000'000;

TEST(HeadRetryTest, BacksOff1248And16ThenExhaustsAtMaxAttempts) {
  PipelineConfig p;  // max-attempts 5 would exhaust on the 5th failure
  p.max_attempts = 6;
  ManualClock clock(kT0);
  HeadRetry h(p, &clock);
  std::vector<std::int64_t> waits;
  for (int i = 0; i < 5; ++i) {
    HeadVerdict v = h.Failed(42);
    ASSERT_EQ(v.kind, HeadVerdict::Kind::kWait) << i;
    EXPECT_FALSE(h.Due(42));
    waits.push_back((v.retry_at - clock.NowMicros()) / 1'000'000);
    clock.Set(v.retry_at);
    EXPECT_TRUE(h.Due(42));
  }
  EXPECT_EQ(waits, (std::vector<std::int64_t>{1, 2, 4, 8, 16}));
  HeadVerdict last = h.Failed(42);
  EXPECT_EQ(last.kind, HeadVerdict::Kind::kExhaust);
  EXPECT_EQ(last.attempts, 6);
  EXPECT_EQ(last.reason, "max-attempts 6");
}

TEST(HeadRetryTest, HeadDeadlineFiresAndIsNeverWaitedPast) {
  PipelineConfig p;
  p.max_attempts = 100;
  p.head_deadline = std::chrono::milliseconds(10'000);
  ManualClock clock(kT0);
  HeadRetry h(p, &clock);
  MicrosSinceEpoch last_retry = 0;
  HeadVerdict v;
  for (int i = 0; i < 10; ++i) {
    v = h.Failed(7);
    if (v.kind == HeadVerdict::Kind::kExhaust) break;
    EXPECT_LE(v.retry_at, kT0 + 10'000'000);  // reachable
    last_retry = v.retry_at;
    clock.Set(v.retry_at);
  }
  EXPECT_EQ(v.kind, HeadVerdict::Kind::kExhaust);
  EXPECT_EQ(v.reason, "head-deadline 10s");
  EXPECT_EQ(last_retry, kT0 + 10'000'000);  // 1+2+4 = 7s, then capped at the deadline
}

TEST(HeadRetryTest, ANewHeadStartsOverAndTheCountSurvivesARestart) {
  PipelineConfig p;
  ManualClock clock(kT0);
  const std::string path =
      (std::filesystem::temp_directory_path() / ("msgx-head-" + std::to_string(::getpid())))
          .string();
  {
    HeadRetry h(p, &clock, path);
    h.Failed(5);
    clock.Advance(seconds(1));
    EXPECT_EQ(h.Failed(5).attempts, 2);
  }
  HeadRetry restarted(p, &clock, path);
  EXPECT_EQ(restarted.head(), 5);
  EXPECT_EQ(restarted.Failed(5).attempts, 3);
  restarted.Cleared(5);
  EXPECT_FALSE(restarted.head().has_value());
  EXPECT_EQ(restarted.Failed(9).attempts, 1);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace msgx
