// BenchLedger: the books of one `msgx bench` run: what the mailbox writer
// committed (mailbox id, kind, commit time) and what the Kafka consumer
// received (tools/bench_consumer.h), turned into a step's figures
// (docs/performance.md#msgx-bench).
//
// Per step:
//   offered     rows committed whose delivery is judged one by one: FLOP
//               (one KAFKA:msg record each) and reference (one KAFKA:ref
//               record each); schedule rows are counted apart
//               (schedule_offered), since their events are pushed in
//               aggregated KAFKA:schd batches (schedule_pushes = records);
//   delivered   offered rows with at least one record carrying their
//               msgx-mailbox-id on their topic;
//   lost        offered - delivered when the step is closed (after its drain);
//   duplicated  records whose msgx-event-id was seen before (whole run);
//   order_violations  KAFKA:msg records whose mailbox id is below the last
//               one delivered for the same key (FLID), whole run;
//   latency     KAFKA:msg only: first receipt - the row's commit, p50/p95/
//               p99/max in ms (nearest rank);
//   seconds     the same latency second by second of the step, by the rows'
//               commit time, so that a tail shows when it happened.
// Receipts for rows of another step still count for duplicates and order.
//
// Thread-safety: not thread-safe; the bench's main thread owns it.
#pragma once

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tools/bench_consumer.h"
#include "tools/bench_traffic.h"

namespace msgx::app {

using BenchTime = std::chrono::steady_clock::time_point;

// The KAFKA:msg rows committed in one second of a step: second k holds the
// rows committed in [first commit + k s, first commit + (k + 1) s).
struct SecondLatency {
  int second = 0;
  std::int64_t delivered = 0;
  double p50_ms = 0, p99_ms = 0, max_ms = 0;
};

struct StepCounts {
  std::int64_t written = 0;  // every row committed in the step
  std::int64_t offered = 0;
  std::int64_t delivered = 0;
  std::int64_t lost = 0;
  std::int64_t duplicated = 0;
  std::int64_t order_violations = 0;
  std::int64_t schedule_offered = 0;
  std::int64_t schedule_pushes = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
  BenchTime first_commit{}, last_commit{}, first_delivery{}, last_delivery{};
  std::vector<SecondLatency> seconds;  // ascending; only seconds with a delivery
};

// Nearest-rank percentile of `sorted` (ascending), p in [0, 1]; 0 if empty.
double Percentile(const std::vector<double>& sorted, double p);

class BenchLedger {
 public:
  // Opens a new step; the previous one's rows are forgotten.
  void BeginStep();
  void Committed(std::int64_t mailbox_id, TrafficKind kind, BenchTime at);
  void Received(const Receipt& r);
  // Offered rows of the step not delivered yet.
  std::int64_t Outstanding() const { return counts_.offered - counts_.delivered; }
  // The step's figures so far (lost = Outstanding()).
  StepCounts Counts() const;

 private:
  struct Row {
    TrafficKind kind;
    BenchTime at;
    bool delivered = false;
  };
  std::unordered_map<std::int64_t, Row> rows_;
  struct Latency {
    BenchTime committed;
    double ms;
  };
  std::vector<Latency> latencies_;
  StepCounts counts_;
  std::unordered_set<std::string> seen_events_;
  std::unordered_map<std::string, std::int64_t> last_per_key_;
};

}  // namespace msgx::app
