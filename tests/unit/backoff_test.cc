#include "base/backoff.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

TEST(BackoffTest, FollowsStepsThenDoublesUpToTheCap) {
  PipelineConfig p;  // 1s,2s,4s,8s,16s capped at 60s
  std::vector<long> got;
  for (int a = 1; a <= 9; ++a) got.push_back(BackoffDelay(p.backoff, p.backoff_cap, a).count());
  EXPECT_EQ(got, (std::vector<long>{1000, 2000, 4000, 8000, 16000, 32000, 60000, 60000, 60000}));
}

TEST(BackoffTest, CapAppliesToListedStepsToo) {
  EXPECT_EQ(BackoffDelay({Millis{500}, Millis{90000}}, Millis{60000}, 2), Millis{60000});
  EXPECT_EQ(BackoffDelay({}, Millis{7000}, 3), Millis{7000});
}

}  // namespace
}  // namespace msgx
