#include "tools/bench_ledger.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace msgx::app {

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto n = static_cast<double>(sorted.size());
  auto rank = static_cast<std::size_t>(std::ceil(p * n));
  if (rank < 1) rank = 1;
  return sorted[std::min(rank, sorted.size()) - 1];
}

void BenchLedger::BeginStep() {
  rows_.clear();
  latencies_.clear();
  counts_ = StepCounts{};
}

void BenchLedger::Committed(std::int64_t mailbox_id, TrafficKind kind, BenchTime at) {
  rows_[mailbox_id] = Row{kind, at};
  ++counts_.written;
  if (kind == TrafficKind::kSchedule) {
    ++counts_.schedule_offered;
  } else {
    ++counts_.offered;
  }
  if (counts_.written == 1) counts_.first_commit = at;
  counts_.last_commit = std::max(counts_.last_commit, at);
}

void BenchLedger::Received(const Receipt& r) {
  if (!seen_events_.insert(r.event_id).second) {
    ++counts_.duplicated;
    return;
  }
  if (r.topic == BenchTopic::kSchd) {
    ++counts_.schedule_pushes;
    return;
  }
  if (r.topic == BenchTopic::kMsg) {
    auto [it, fresh] = last_per_key_.emplace(r.key, r.mailbox_id);
    if (!fresh) {
      if (r.mailbox_id < it->second) ++counts_.order_violations;
      it->second = std::max(it->second, r.mailbox_id);
    }
  }
  auto row = rows_.find(r.mailbox_id);
  if (row == rows_.end() || row->second.delivered) return;
  const TrafficKind want =
      r.topic == BenchTopic::kMsg ? TrafficKind::kFlop : TrafficKind::kReference;
  if (row->second.kind != want) return;
  row->second.delivered = true;
  ++counts_.delivered;
  if (counts_.delivered == 1) counts_.first_delivery = r.at;
  counts_.first_delivery = std::min(counts_.first_delivery, r.at);
  counts_.last_delivery = std::max(counts_.last_delivery, r.at);
  if (r.topic == BenchTopic::kMsg) {
    latencies_.push_back(Latency{
        row->second.at, std::chrono::duration<double, std::milli>(r.at - row->second.at).count()});
  }
}

StepCounts BenchLedger::Counts() const {
  StepCounts c = counts_;
  c.lost = Outstanding();
  std::vector<double> sorted;
  sorted.reserve(latencies_.size());
  std::map<int, std::vector<double>> by_second;
  for (const Latency& l : latencies_) {
    sorted.push_back(l.ms);
    const auto since =
        std::chrono::duration_cast<std::chrono::seconds>(l.committed - c.first_commit);
    by_second[static_cast<int>(since.count())].push_back(l.ms);
  }
  std::sort(sorted.begin(), sorted.end());
  c.p50_ms = Percentile(sorted, 0.50);
  c.p95_ms = Percentile(sorted, 0.95);
  c.p99_ms = Percentile(sorted, 0.99);
  c.max_ms = sorted.empty() ? 0 : sorted.back();
  for (auto& [second, ms] : by_second) {
    std::sort(ms.begin(), ms.end());
    c.seconds.push_back(SecondLatency{second, static_cast<std::int64_t>(ms.size()),
                                      Percentile(ms, 0.50), Percentile(ms, 0.99), ms.back()});
  }
  return c;
}

}  // namespace msgx::app
