// The processed mark's runner policy (ProcessedMarkPolicy,
// stream/service/job_stages.h) over the one backoff rule (base/backoff.h):
// leader only, a run every pipeline.backfill-backoff-ms, and a stall backs
// off from it doubling to pipeline.backfill-backoff-cap-ms. Pure: the
// delays are computed, nothing waits.
#include <gtest/gtest.h>

#include <vector>

#include "base/backoff.h"
#include "base/config.h"
#include "stream/service/job_stages.h"

namespace msgx {
namespace {

TEST(MarkPolicy, RunsEveryBackoffAndStallsFromThirtySecondsToFifteenMinutes) {
  const Config c;  // the defaults
  const StagePolicy p = ProcessedMarkPolicy(c);
  EXPECT_TRUE(p.needs_leadership);
  EXPECT_EQ(p.idle_wait, Millis(30'000));
  const std::vector<Millis> want = {Millis(30'000),  Millis(60'000),  Millis(120'000),
                                    Millis(240'000), Millis(480'000), Millis(900'000),
                                    Millis(900'000), Millis(900'000)};
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(BackoffDelay(p.backoff, p.backoff_cap, static_cast<int>(i) + 1), want[i]) << i;
  }
}

TEST(MarkPolicy, FollowsTheConfiguredKeys) {
  Config c;
  c.pipeline.backfill_backoff = Millis(1000);
  c.pipeline.backfill_backoff_cap = Millis(3000);
  const StagePolicy p = ProcessedMarkPolicy(c);
  EXPECT_EQ(p.idle_wait, Millis(1000));
  EXPECT_EQ(BackoffDelay(p.backoff, p.backoff_cap, 1), Millis(1000));
  EXPECT_EQ(BackoffDelay(p.backoff, p.backoff_cap, 2), Millis(2000));
  EXPECT_EQ(BackoffDelay(p.backoff, p.backoff_cap, 3), Millis(3000));
  EXPECT_EQ(BackoffDelay(p.backoff, p.backoff_cap, 9), Millis(3000));
}

}  // namespace
}  // namespace msgx
