#include "base/metrics.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

TEST(MetricsTest, RendersPrometheusTextSortedWithEscapedLabels) {
  Metrics m;
  m.GetCounter("msgx_outcomes_total", "Outcomes", {{"state", "DEAD"}, {"class", "MALFORMED"}})
      ->Add(2);
  m.GetCounter("msgx_outcomes_total", "Outcomes", {{"state", "SUCCEEDED"}, {"class", ""}})->Add();
  m.GetGauge("msgx_capture_lag", "Lag", {{"why", "say \"hi\"\n"}})->Set(1.5);
  // The same series again is the same counter.
  m.GetCounter("msgx_outcomes_total", "Outcomes", {{"state", "DEAD"}, {"class", "MALFORMED"}})
      ->Add(1);
  EXPECT_EQ(m.Render(),
            "# HELP msgx_capture_lag Lag\n"
            "# TYPE msgx_capture_lag gauge\n"
            "msgx_capture_lag{why=\"say \\\"hi\\\"\\n\"} 1.5\n"
            "# HELP msgx_outcomes_total Outcomes\n"
            "# TYPE msgx_outcomes_total counter\n"
            "msgx_outcomes_total{state=\"DEAD\",class=\"MALFORMED\"} 3\n"
            "msgx_outcomes_total{state=\"SUCCEEDED\",class=\"\"} 1\n");
}

}  // namespace
}  // namespace msgx
