// KAFKA:schd's aggregation (DispatcherOptions::aggregate): a batch of the
// target's events claimed by batch_id and sent as one Kafka message of the
// latest payload per FLID (stream/dispatch/dispatcher.h, "KAFKA:schd";
// docs/dispatch.md#kafkaschd-aggregation). The rest of the dispatcher is in
// dispatcher.cc.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "stream/dispatch/dispatcher.h"

namespace msgx {

OutgoingMessage Dispatcher::BatchMessage(const std::vector<Event>& members) const {
  // The latest event per FLID, in the order of those latest events.
  std::map<std::string, size_t> latest;
  for (size_t i = 0; i < members.size(); ++i) latest[members[i].partition_key] = i;
  std::vector<size_t> keep;
  keep.reserve(latest.size());
  for (const auto& [flid, i] : latest) keep.push_back(i);
  std::sort(keep.begin(), keep.end());
  std::string value = "[";
  for (size_t k = 0; k < keep.size(); ++k) {
    if (k > 0) value += ',';
    value += members[keep[k]].payload;
  }
  value += ']';
  OutgoingMessage m{options_.topic, "schedule", std::move(value), {}};
  m.headers = {{"msgx-event-id", "schd-batch:" + std::to_string(members.front().batch_id)},
               {"msgx-mailbox-id", std::to_string(members.back().source_msg_id)},
               {"msgx-type", "SCHEDULE"}};
  const bool replayed =
      std::any_of(members.begin(), members.end(), [](const Event& e) { return e.replayed; });
  if (replayed) m.headers.emplace_back("msgx-replay", "1");
  return m;
}

Result<DispatchStep> Dispatcher::StepAggregate() {
  DispatchStep step;
  auto open = LoadHead(true, false);
  if (!open.ok()) {
    if (open.status().error_class() == ErrorClass::kInfra) return Stall(open.status());
    return open.status();
  }
  auto gate = mirror_offset_();
  if (!gate.ok()) {
    if (gate.status().error_class() == ErrorClass::kInfra) return Stall(gate.status());
    return gate.status();
  }
  const MicrosSinceEpoch now = clock_->NowMicros();
  std::vector<Event> members;
  if (!open->empty()) {
    // Retry the open batch exactly as it was formed.
    const std::int64_t id = open->front().batch_id;
    for (auto& e : *open) {
      if (e.batch_id == id) members.push_back(std::move(e));
    }
    if (Status s = ReconcileIfDue(); !s.ok()) {
      return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
    }
    // One Kafka message: delivered whole (replay members included) or not.
    auto top = HighestPosition(members);
    if (!top.ok()) return top.status();
    if (top->has_value() && high_water_ && **top <= *high_water_) {
      if (Status s = MarkDelivered(members); !s.ok()) {
        return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
      }
      last_flush_mono_ = clock_->MonotonicMicros();
      step.kind = DispatchStep::Kind::kSent;
      return step;
    }
    if (members.front().next_attempt_micros > now) {
      step.kind = DispatchStep::Kind::kWaitingHead;
      step.until_micros = members.front().next_attempt_micros;
      return step;
    }
  } else {
    auto cand = LoadHead(false, true);
    if (!cand.ok()) {
      if (cand.status().error_class() == ErrorClass::kInfra) return Stall(cand.status());
      return cand.status();
    }
    if (cand->empty()) return step;  // kIdle
    if (Status s = ReconcileIfDue(); !s.ok()) {
      return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
    }
    if (Status s = SkipDelivered(&*cand); !s.ok()) {
      return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
    }
    if (cand->empty()) {
      step.kind = DispatchStep::Kind::kSent;  // all of it was in Kafka already
      return step;
    }
    std::int64_t bytes = 2;  // "[" and "]"
    bool cut_by_bytes = false;
    for (auto& e : *cand) {
      if (e.state_version > *gate || e.next_attempt_micros > now) break;
      const std::int64_t add = static_cast<std::int64_t>(e.payload.size()) + 1;
      if (!members.empty() && bytes + add > options_.max_batch_bytes) {
        cut_by_bytes = true;
        break;
      }
      bytes += add;
      members.push_back(std::move(e));
    }
    if (members.empty()) {
      step.kind = DispatchStep::Kind::kGated;
      return step;
    }
    const bool full = static_cast<int>(members.size()) >= options_.flush_limit || cut_by_bytes;
    const std::int64_t since_flush = clock_->MonotonicMicros() - last_flush_mono_;
    const std::int64_t period = options_.flush_period.count() * 1000;
    if (!full && since_flush < period) {
      step.kind = DispatchStep::Kind::kBatching;
      step.retry_after = Millis{(period - since_flush + 999) / 1000};
      return step;
    }
    // Record the membership before the first send.
    const std::int64_t batch_id = members.front().event_id;
    for (auto& e : members) e.batch_id = batch_id;
    const std::vector<std::int64_t> ids = EventIds(members);
    Status s = RunFenced([&](pqxx::dbtransaction& tx) {
      tx.exec_params(
          "UPDATE msg_event SET batch_id = $1 WHERE event_id = ANY($2::bigint[]) "
          "AND state = 'PENDING' AND batch_id IS NULL",
          batch_id, PgArrayLiteral(ids));
    });
    if (!s.ok()) return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
  }

  auto published = PublishWithProgress({BatchMessage(members)}, members);
  if (!published.ok()) return published.status();
  PublishResult r = std::move(published.value());
  if (r.committed) {
    Status s = MarkSentAfterCommit(members);
    if (!s.ok()) return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
    last_flush_mono_ = clock_->MonotonicMicros();
    step.kind = DispatchStep::Kind::kSent;
    step.sent = static_cast<int>(members.size());
    return step;
  }
  if (!r.permanent_index) return Stall(r.outage);
  auto dead = Charge(members, r.permanent_error);
  if (!dead.ok()) return dead.status();
  step.kind = DispatchStep::Kind::kCharged;
  step.dead = *dead;
  step.error = r.permanent_error;
  return step;
}

}  // namespace msgx
