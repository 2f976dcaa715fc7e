// The books of `msgx bench` (tools/bench_ledger.h), its step list
// (tools/bench_ramp.h) and its /proc reading (tools/bench_process.h): pure,
// with made-up times.
#include "tools/bench_ledger.h"

#include <gtest/gtest.h>

#include "tools/bench_process.h"
#include "tools/bench_ramp.h"

namespace msgx::app {
namespace {

using std::chrono::milliseconds;
const BenchTime kT0{};

Receipt Rec(BenchTopic topic, const std::string& event, std::int64_t id, const std::string& key,
            int ms) {
  return Receipt{topic, event, id, key, kT0 + milliseconds(ms)};
}

TEST(BenchLedger, CountsDeliveryLossDuplicatesOrderAndLatency) {
  BenchLedger l;
  l.BeginStep();
  for (int id = 1; id <= 4; ++id) l.Committed(id, TrafficKind::kFlop, kT0 + milliseconds(id));
  l.Committed(5, TrafficKind::kReference, kT0 + milliseconds(5));
  l.Committed(6, TrafficKind::kSchedule, kT0 + milliseconds(6));
  EXPECT_EQ(l.Outstanding(), 5);
  l.Received(Rec(BenchTopic::kMsg, "e1", 1, "F1", 11));  // 10 ms
  l.Received(Rec(BenchTopic::kMsg, "e3", 3, "F1", 23));  // 20 ms
  l.Received(Rec(BenchTopic::kMsg, "e2", 2, "F1", 32));  // 30 ms, after 3: out of order
  l.Received(Rec(BenchTopic::kMsg, "e2", 2, "F1", 40));  // duplicate
  l.Received(Rec(BenchTopic::kRef, "r5", 5, "STTS|X", 50));
  l.Received(Rec(BenchTopic::kMsg, "e6", 6, "F2", 60));  // a schedule row on msg: not delivery
  l.Received(Rec(BenchTopic::kSchd, "schd-batch:9", 0, "schedule", 70));
  l.Received(Rec(BenchTopic::kMsg, "e99", 99, "F3", 80));  // another step's row
  const StepCounts c = l.Counts();
  EXPECT_EQ(c.written, 6);
  EXPECT_EQ(c.offered, 5);
  EXPECT_EQ(c.schedule_offered, 1);
  EXPECT_EQ(c.delivered, 4);
  EXPECT_EQ(c.lost, 1);  // id 4
  EXPECT_EQ(c.duplicated, 1);
  EXPECT_EQ(c.order_violations, 1);
  EXPECT_EQ(c.schedule_pushes, 1);
  EXPECT_DOUBLE_EQ(c.p50_ms, 20);  // msg only: 10, 20, 30
  EXPECT_DOUBLE_EQ(c.p99_ms, 30);
  EXPECT_DOUBLE_EQ(c.max_ms, 30);
  EXPECT_EQ(c.first_delivery, kT0 + milliseconds(11));
  EXPECT_EQ(c.last_delivery, kT0 + milliseconds(50));

  // A new step forgets the rows but not the events seen.
  l.BeginStep();
  l.Committed(7, TrafficKind::kFlop, kT0);
  l.Received(Rec(BenchTopic::kMsg, "e1", 7, "F1", 90));  // an old event id: duplicate
  EXPECT_EQ(l.Counts().duplicated, 1);
  EXPECT_EQ(l.Counts().delivered, 0);
}

// Each second's figures hold only the rows committed in it, so a stall
// shows in the second it hit and not in the others.
TEST(BenchLedger, SplitsTheLatencyBySecondOfCommit) {
  BenchLedger l;
  l.BeginStep();
  // Second 0: rows 1-3 at 0, 400, 999 ms; second 2: rows 4-5 at 2,000 and
  // 2,500 ms. Nothing is committed in second 1.
  const int at[] = {0, 400, 999, 2000, 2500};
  for (int id = 1; id <= 5; ++id)
    l.Committed(id, TrafficKind::kFlop, kT0 + milliseconds(at[id - 1]));
  l.Committed(6, TrafficKind::kReference, kT0 + milliseconds(1500));  // not KAFKA:msg
  l.Received(Rec(BenchTopic::kMsg, "e1", 1, "F1", 10));               // 10 ms
  l.Received(Rec(BenchTopic::kMsg, "e2", 2, "F2", 430));              // 30 ms
  l.Received(Rec(BenchTopic::kMsg, "e3", 3, "F3", 1019));             // 20 ms
  l.Received(Rec(BenchTopic::kRef, "r6", 6, "STTS|X", 1900));
  l.Received(Rec(BenchTopic::kMsg, "e4", 4, "F4", 2400));  // 400 ms: the stall
  // Row 5 is not delivered: its second has row 4 only.
  const StepCounts c = l.Counts();
  ASSERT_EQ(c.seconds.size(), 2U);
  EXPECT_EQ(c.seconds[0].second, 0);
  EXPECT_EQ(c.seconds[0].delivered, 3);
  EXPECT_DOUBLE_EQ(c.seconds[0].p50_ms, 20);
  EXPECT_DOUBLE_EQ(c.seconds[0].p99_ms, 30);
  EXPECT_DOUBLE_EQ(c.seconds[0].max_ms, 30);
  EXPECT_EQ(c.seconds[1].second, 2);
  EXPECT_EQ(c.seconds[1].delivered, 1);
  EXPECT_DOUBLE_EQ(c.seconds[1].p99_ms, 400);
  EXPECT_DOUBLE_EQ(c.p99_ms, 400);  // the step's own figure still holds them all

  l.BeginStep();
  EXPECT_TRUE(l.Counts().seconds.empty());
}

TEST(BenchLedger, PercentileIsNearestRank) {
  std::vector<double> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.50), 50);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.95), 95);
  EXPECT_DOUBLE_EQ(Percentile(v, 0.99), 99);
  EXPECT_DOUBLE_EQ(Percentile({7}, 0.99), 7);
  EXPECT_DOUBLE_EQ(Percentile({}, 0.5), 0);
}

TEST(BenchSteps, ParsesRatesAndRefusesTheRest) {
  auto s = ParseSteps("smoke,1k,2.5k,700");
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ((*s)[0].name, "smoke");
  EXPECT_DOUBLE_EQ((*s)[0].rate, 50);
  EXPECT_DOUBLE_EQ((*s)[1].rate, 1000);
  EXPECT_DOUBLE_EQ((*s)[2].rate, 2500);
  EXPECT_DOUBLE_EQ((*s)[3].rate, 700);
  for (const char* bad : {"", "fast", "1k,", "-5", "0", "1kk", "1e9"}) {
    auto r = ParseSteps(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.status().error_class(), ErrorClass::kUsage) << bad;
    }
  }
}

TEST(BenchProcess, ReadsCpuAndPeakRssFromProc) {
  const std::string stat =
      "4242 (msgx (run)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 9 0 1 2 3";
  const std::string status =
      "Name:\tmsgx\nVmPeak:\t  900 kB\nVmHWM:\t   51200 kB\nVmRSS:\t 100 kB\n";
  auto s = ParseProc(stat, status, 100);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);  // (250 + 50) ticks / 100
  EXPECT_EQ(s->peak_rss_bytes, 51200LL * 1024);
  EXPECT_FALSE(ParseProc("garbage", status, 100).has_value());
}

}  // namespace
}  // namespace msgx::app
