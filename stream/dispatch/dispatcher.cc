#include "stream/dispatch/dispatcher.h"

#include <algorithm>
#include <future>
#include <memory>

#include "base/backoff.h"
#include "base/failpoint.h"
#include "base/log.h"
#include "base/metrics.h"
#include "state/outcome.h"
#include "stream/pg/outbox_delivery.h"
#include "stream/pg/pg_leadership.h"
#include "stream/pg/pg_session.h"
#include "stream/pg/prepared.h"

namespace msgx {
namespace {

constexpr size_t kMaxErrorChars = 1000;  // msg_event.last_error VARCHAR(1000)

// The columns of an Event, in LoadHead's order.
constexpr const char* kHeadColumns =
    "SELECT event_id, event_key, coalesce(partition_key, ''), event_type, state_version, "
    "payload_json, attempts, "
    "coalesce((extract(epoch FROM next_attempt_at) * 1000000)::bigint, 0), "
    "coalesce(source_msg_id, 0), replayed_at IS NOT NULL, coalesce(batch_id, 0), "
    "(extract(epoch FROM created_at) * 1000000)::bigint, "
    "coalesce((extract(epoch FROM received_at) * 1000000)::bigint, 0) FROM msg_event WHERE ";

}  // namespace

DispatcherOptions DispatcherOptions::ForTarget(const Config& config, const std::string& target,
                                               const std::string& log_uuid) {
  DispatcherOptions o;
  o.target = target;
  o.log_uuid = log_uuid;
  o.progress_topic = config.topic_progress;
  o.progress_key = ProgressKey(log_uuid, target);
  o.topic = target == "KAFKA:schd"  ? config.topic_schd
            : target == "KAFKA:ref" ? config.topic_ref
                                    : config.topic_msg;
  o.max_attempts = config.pipeline.max_attempts;
  o.backoff = config.pipeline.backoff;
  o.backoff_cap = config.pipeline.backoff_cap;
  o.aggregate = target == "KAFKA:schd";
  o.flush_period = config.schd_flush_period;
  o.flush_limit = config.schd_flush_limit;
  o.max_batch_bytes = config.schd_max_batch_bytes;
  return o;
}

Dispatcher::Dispatcher(PgSession* pg, Publisher* publisher, MirrorOffsetFn mirror_offset,
                       Clock* clock, DispatcherOptions options)
    : pg_(pg),
      publisher_(publisher),
      mirror_offset_(std::move(mirror_offset)),
      clock_(clock),
      options_(std::move(options)),
      last_flush_mono_(clock->MonotonicMicros()),
      dispatch_latency_(Metrics::Global().GetHistogram(
          "msgx_dispatch_latency_seconds",
          "Outbox row created to its Kafka acknowledgement, per event", LatencyBuckets(),
          {{"target", options_.target}})),
      e2e_latency_(Metrics::Global().GetHistogram(
          "msgx_e2e_latency_seconds",
          "Mailbox row received to the Kafka acknowledgement of an event it caused",
          LatencyBuckets(), {{"target", options_.target}})),
      reconciled_counter_(Metrics::Global().GetCounter(
          "msgx_dispatch_reconciled_total",
          "Events found already in Kafka at reconcile and marked SENT without a send",
          {{"target", options_.target}})) {}

Result<DispatchStep> Dispatcher::Step() {
  Result<DispatchStep> step = [&]() -> Result<DispatchStep> {
    if (!options_.log_uuid.empty() && epoch_ == 0) return Stall(Status::Infra("not leader"));
    if (epoch_ != reconciled_epoch_) reconcile_due_ = true;  // a leader change
    return options_.aggregate ? StepAggregate() : StepSingle();
  }();
  // The SENT update of a full batch (a backlog) runs on into the next step,
  // which reads and sends the next batch meanwhile; any other step ends with
  // none in flight, so an idle dispatcher's events are all marked. Below a
  // full batch the service keeps up, and overlapping only made its steps
  // smaller and more frequent: more transactions for a PostgreSQL that is
  // the service's bottleneck (docs/dispatch.md#the-sent-update-overlaps-the-next-batch).
  // An update still in flight here is this step's: StartMark and the
  // resends after a permanent error wait for the last one first.
  if (marked_.valid() && options_.overlap_sent_update && step.ok() &&
      step->kind == DispatchStep::Kind::kSent && step->sent >= options_.claim_limit) {
    return step;
  }
  Status marked = FinishMark();
  if (marked.ok() || !step.ok()) return step;
  if (marked.error_class() != ErrorClass::kInfra) return marked;
  DispatchStep stalled = Stall(marked);
  if (step->kind == DispatchStep::Kind::kSent) stalled.sent = step->sent;
  return stalled;
}

Status Dispatcher::StartMark(std::vector<Event> events) {
  if (Status s = FinishMark(); !s.ok()) return s;
  // Test-only: kill -9 after Kafka's commit, before the SENT update.
  MSGX_FAILPOINT("dispatch.committed", options_.target);
  if (!mark_pg_) mark_pg_ = std::make_unique<PgSession>(pg_->url());
  marking_ = std::move(events);
  // Only values cross to the other thread; the counting is FinishMark's.
  if (!mark_thread_) mark_thread_ = std::make_unique<TaskThread>(options_.target + "-sent");
  marked_ = mark_thread_->Run([pg = mark_pg_.get(), fence = Fence(), d = DeliveryOf(marking_),
                               target = options_.target, now = PgTimestamp(clock_->NowMicros())] {
    return RecordDeliveryFenced(pg, fence, target, d, now).status();
  });
  return Status::Ok();
}

Status Dispatcher::FinishMark() {
  if (!marked_.valid()) return Status::Ok();
  Status s = marked_.get();
  if (s.ok()) {
    CountSent(marking_);
  } else {
    reconcile_due_ = true;  // did the UPDATE land? Kafka knows.
  }
  marking_.clear();
  return s;
}

Status Dispatcher::ReconcileIfDue() {
  if (!reconcile_due_) return Status::Ok();
  if (options_.progress_topic.empty()) {
    reconcile_due_ = false;
    reconciled_epoch_ = epoch_;
    return Status::Ok();
  }
  // First settle any transaction of this id still open (ours before a
  // crash or a timeout, or a former leader's): only then is a read final.
  if (Status s = publisher_->Prepare(); !s.ok()) return s;
  auto value = publisher_->ReadProgress(options_.progress_topic, options_.progress_key);
  if (!value.ok()) return value.status();
  if (value->has_value()) {
    auto read = DecodeProgress(**value);
    if (!read.ok()) {
      return Status(read.status().error_class(), options_.progress_topic + " key " +
                                                     options_.progress_key + ": " +
                                                     read.status().message());
    }
    if (!high_water_ || *read > *high_water_) high_water_ = *read;
  }
  reconcile_due_ = false;
  reconciled_epoch_ = epoch_;
  Logger("dispatch")
      ->info("{} reconciled with {}: delivered up to {}", options_.target, options_.progress_topic,
             high_water_ ? EncodeProgress(*high_water_) : std::string("nothing"));
  return Status::Ok();
}

Result<bool> Dispatcher::AlreadyDelivered(const Event& e) const {
  if (e.replayed || !high_water_) return false;
  auto p = PositionOfEvent(e.state_version, e.event_key);
  if (!p.ok()) return p.status();
  return *p <= *high_water_;
}

Status Dispatcher::SkipDelivered(std::vector<Event>* events) {
  if (!high_water_) return Status::Ok();
  std::vector<Event> delivered;
  std::vector<Event> rest;
  rest.reserve(events->size());
  for (auto& e : *events) {
    auto done = AlreadyDelivered(e);
    if (!done.ok()) return done.status();
    (*done ? delivered : rest).push_back(std::move(e));
  }
  *events = std::move(rest);
  return delivered.empty() ? Status::Ok() : MarkDelivered(delivered);
}

Status Dispatcher::MarkDelivered(const std::vector<Event>& events) {
  if (events.empty()) return Status::Ok();
  const std::vector<std::int64_t> ids = EventIds(events);
  const std::string now = PgTimestamp(clock_->NowMicros());
  auto recorded = RecordDeliveryFenced(pg_, Fence(), options_.target, DeliveryOf(events), now);
  if (!recorded.ok()) return recorded.status();
  const std::int64_t marked = *recorded;
  reconciled_total_ += marked;
  reconciled_counter_->Add(marked);
  // A warning: the outbox took Kafka's word for these events, which an
  // operator should be able to find after a crash. The crash tests' Kafka
  // check (tests/support/kafka_check.h) reads the event_id range from msgx
  // runs logging at warn (docs/crash-safety.md#the-mock-clusters-duplicates).
  const auto [lo, hi] = std::minmax_element(ids.begin(), ids.end());
  Logger("dispatch")
      ->warn(
          "{}: {} events already in Kafka (delivered up to {}) marked SENT without a send: "
          "event_id {}..{}",
          options_.target, marked, EncodeProgress(*high_water_), *lo, *hi);
  return Status::Ok();
}

Result<std::optional<DeliveryPosition>> Dispatcher::HighestPosition(
    const std::vector<Event>& events) {
  std::optional<DeliveryPosition> top;
  for (const auto& e : events) {
    if (e.replayed) continue;
    auto p = PositionOfEvent(e.state_version, e.event_key);
    if (!p.ok()) return p.status();
    if (!top || *p > *top) top = *p;
  }
  return top;
}

Result<PublishResult> Dispatcher::PublishWithProgress(std::vector<OutgoingMessage> msgs,
                                                      const std::vector<Event>& events) {
  std::optional<DeliveryPosition> next;
  const size_t progress_index = msgs.size();
  if (!options_.progress_topic.empty()) {
    auto top = HighestPosition(events);
    if (!top.ok()) return top.status();
    if (top->has_value()) {
      // Never backwards: the record always says the most that is delivered.
      next = high_water_ && *high_water_ > **top ? *high_water_ : **top;
      OutgoingMessage m{options_.progress_topic, options_.progress_key, EncodeProgress(*next), {}};
      m.partition = 0;
      msgs.push_back(std::move(m));
    }
  }
  PublishResult r = publisher_->Publish(msgs);
  if (r.committed) {
    if (next) high_water_ = next;
    return r;
  }
  if (next && r.permanent_index && *r.permanent_index == progress_index) {
    PublishResult outage;
    outage.outage = Status::Infra("kafka: " + options_.progress_topic +
                                  " refused the progress record: " + r.permanent_error);
    r = std::move(outage);
  }
  // An outage may hide a commit that went through (a timed-out commit):
  // learn from Kafka before sending again.
  if (!r.permanent_index) reconcile_due_ = true;
  return r;
}

Status Dispatcher::MarkSentAfterCommit(const std::vector<Event>& events) {
  // Test-only: kill -9 after Kafka's commit, before the SENT update.
  MSGX_FAILPOINT("dispatch.committed", options_.target);
  Status s = MarkSent(events);
  if (!s.ok()) reconcile_due_ = true;  // did the UPDATE land? Kafka knows.
  return s;
}

std::string Dispatcher::HeadQuery(std::string_view target, bool open_batch_only,
                                  bool unbatched_only) {
  std::string filter;
  if (open_batch_only) filter += " AND batch_id IS NOT NULL";
  if (unbatched_only) filter += " AND batch_id IS NULL";
  const std::string literal = PgTextLiteral(target);
  // Two ordered branches, each on its own index (outbox_delivery.h): the
  // events above the delivered position and the replayed ones below it;
  // each leaves out the events still in flight (HeadSkip).
  std::string sql = "(";
  sql.append(kHeadColumns).append(UndeliveredAboveSql(literal)).append(filter);
  sql.append(" AND event_id > $2 ORDER BY event_id LIMIT $1) UNION ALL (");
  sql.append(kHeadColumns).append(UndeliveredReplayedSql(literal)).append(filter);
  sql.append(" AND NOT (event_id = ANY($3::bigint[])) ORDER BY event_id LIMIT $1) ORDER BY 1 ");
  sql.append("LIMIT $1");
  return sql;
}

Dispatcher::HeadSkip Dispatcher::SkipOf(const std::vector<Event>& a, const std::vector<Event>& b) {
  HeadSkip skip;
  for (const auto* events : {&a, &b}) {
    for (const auto& e : *events) {
      skip.floor = std::max(skip.floor, e.event_id);
      if (e.replayed) skip.replayed_ids.push_back(e.event_id);
    }
  }
  return skip;
}

Dispatcher::Event Dispatcher::EventOfRow(const pqxx::row& row, int first) {
  Event e;
  e.event_id = row[first].as<std::int64_t>();
  e.event_key = row[first + 1].as<std::string>();
  e.partition_key = row[first + 2].as<std::string>();
  e.event_type = row[first + 3].as<std::string>();
  e.state_version = row[first + 4].as<std::int64_t>();
  e.payload = row[first + 5].as<std::string>();
  e.attempts = row[first + 6].as<int>();
  e.next_attempt_micros = row[first + 7].as<std::int64_t>();
  e.source_msg_id = row[first + 8].as<std::int64_t>();
  e.replayed = row[first + 9].as<bool>();
  e.batch_id = row[first + 10].as<std::int64_t>();
  e.created_micros = row[first + 11].as<std::int64_t>();
  e.received_micros = row[first + 12].as<std::int64_t>();
  return e;
}

Result<std::vector<Dispatcher::Event>> Dispatcher::ReadHead(PgSession* pg, const HeadRead& read) {
  std::vector<Event> out;
  const std::string array = PgArrayLiteral(read.skip.replayed_ids);
  if (read.log_uuid.empty()) {
    Status s = pg->Run([&](pqxx::dbtransaction& tx) {
      out.clear();
      const pqxx::result r = ExecPrepared(tx, read.sql, read.limit, read.skip.floor, array);
      out.reserve(r.size());
      for (const auto& row : r) out.push_back(EventOfRow(row, 0));
    });
    if (!s.ok()) return s;
    return out;
  }
  // Fenced too: a stale leader loads nothing, so it publishes nothing. One
  // statement, one round trip (FencedReadSql).
  Status fence = Status::Ok();
  Status s = pg->RunStatement([&](pqxx::transaction_base& tx) {
    out.clear();
    const pqxx::result r = ExecPrepared(tx, FencedReadSql(read.sql, 4), read.limit, read.skip.floor,
                                        array, read.pipeline);
    fence = CheckFencedRead(r, read.pipeline, read.epoch, read.log_uuid);
    if (!fence.ok()) return;
    out.reserve(r.size());
    for (const auto& row : r) {
      if (!row[2].is_null()) out.push_back(EventOfRow(row, 2));
    }
  });
  if (!s.ok()) return s;
  if (!fence.ok()) return fence;
  // The fenced read has no ORDER BY of its own (FencedReadSql).
  auto by_id = [](const Event& a, const Event& b) { return a.event_id < b.event_id; };
  if (!std::is_sorted(out.begin(), out.end(), by_id)) std::sort(out.begin(), out.end(), by_id);
  return out;
}

Dispatcher::HeadRead Dispatcher::HeadReadOf(bool open_batch_only, bool unbatched_only,
                                            HeadSkip skip) const {
  HeadRead read;
  read.sql = HeadQuery(options_.target, open_batch_only, unbatched_only);
  read.limit = options_.head_limit();
  read.skip = std::move(skip);
  read.pipeline = options_.pipeline;
  read.epoch = epoch_;
  read.log_uuid = options_.log_uuid;
  return read;
}

Result<std::vector<Dispatcher::Event>> Dispatcher::LoadHead(bool open_batch_only,
                                                            bool unbatched_only) {
  // The events whose SENT update is still running are sent already.
  return ReadHead(pg_, HeadReadOf(open_batch_only, unbatched_only, SkipOf(marking_, {})));
}

void Dispatcher::StartPrefetch(const std::vector<Event>& sending) {
  if (!head_pg_) head_pg_ = std::make_unique<PgSession>(pg_->url());
  prefetch_epoch_ = epoch_;
  if (!head_thread_) head_thread_ = std::make_unique<TaskThread>(options_.target + "-head");
  prefetched_ = head_thread_->Run(
      [pg = head_pg_.get(), read = HeadReadOf(false, false, SkipOf(marking_, sending))] {
        return ReadHead(pg, read);
      });
}

void Dispatcher::DropPrefetch() {
  if (!prefetched_.valid()) return;
  prefetched_.wait();  // it uses head_pg_
  prefetched_ = {};
}

Result<std::vector<Dispatcher::Event>> Dispatcher::NextHead() {
  if (!prefetched_.valid()) return LoadHead(false, false);
  Result<std::vector<Event>> head = prefetched_.get();
  // Read while the last batch was in Kafka, leaving it and the batch
  // before it out. A leader change since then reads again, and so does a
  // due reconcile: a SENT update that failed left its events PENDING below
  // what the read-ahead starts at, and a later range must not pass them
  // unrecorded (stream/pg/outbox_delivery.h).
  if (!head.ok() || prefetch_epoch_ != epoch_ || reconcile_due_) return LoadHead(false, false);
  ++prefetched_heads_;
  return head;
}

OutgoingMessage Dispatcher::ToMessage(Event& e) const {
  OutgoingMessage m{options_.topic, e.partition_key, std::move(e.payload), {}};
  e.payload.clear();
  m.headers = {{"msgx-event-id", e.event_key},
               {"msgx-mailbox-id", std::to_string(e.source_msg_id)},
               {"msgx-type", e.event_type}};
  if (e.replayed) m.headers.emplace_back("msgx-replay", "1");
  return m;
}

std::vector<std::int64_t> Dispatcher::EventIds(const std::vector<Event>& events) {
  std::vector<std::int64_t> ids;
  ids.reserve(events.size());
  for (const auto& e : events) ids.push_back(e.event_id);
  return ids;
}

Delivery Dispatcher::DeliveryOf(const std::vector<Event>& events) {
  Delivery d;
  for (const auto& e : events) {
    if (e.replayed) {
      d.replayed_ids.push_back(e.event_id);
      continue;
    }
    if (d.events == 0 || e.event_id < d.first_event_id) d.first_event_id = e.event_id;
    d.last_event_id = std::max(d.last_event_id, e.event_id);
    ++d.events;
  }
  return d;
}

DeliveryFence Dispatcher::Fence() const { return {options_.pipeline, epoch_, options_.log_uuid}; }

Status Dispatcher::MarkSent(const std::vector<Event>& events) {
  const std::string now = PgTimestamp(clock_->NowMicros());
  Status s = RecordDeliveryFenced(pg_, Fence(), options_.target, DeliveryOf(events), now).status();
  if (s.ok()) CountSent(events);
  return s;
}

void Dispatcher::CountSent(const std::vector<Event>& events) {
  sent_total_ += static_cast<std::int64_t>(events.size());
  stalled_ = false;
  ObserveLatencies(events, clock_->NowMicros());
}

void Dispatcher::ObserveLatencies(const std::vector<Event>& events, MicrosSinceEpoch acked) {
  auto seconds = [acked](MicrosSinceEpoch since) {
    return static_cast<double>(std::max<MicrosSinceEpoch>(0, acked - since)) / 1e6;
  };
  for (const auto& e : events) {
    if (e.created_micros > 0) dispatch_latency_->Observe(seconds(e.created_micros));
    if (e.received_micros > 0) e2e_latency_->Observe(seconds(e.received_micros));
  }
}

std::string Dispatcher::CountOutboxQuery() {
  return "SELECT " + UndeliveredCountSql("$1") +
         ", (SELECT count(*) FROM msg_event WHERE target = $1 AND state = 'DEAD')";
}

Result<OutboxCounts> Dispatcher::CountOutbox() {
  OutboxCounts c;
  Status s = pg_->Run([&](pqxx::dbtransaction& tx) {
    const pqxx::row r = tx.exec_params1(CountOutboxQuery(), options_.target);
    c.pending = r[0].as<std::int64_t>();
    c.dead = r[1].as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return c;
}

Result<int> Dispatcher::Charge(const std::vector<Event>& events, const std::string& error) {
  const std::vector<std::int64_t> ids = EventIds(events);
  const int attempt = events.front().attempts + 1;
  const MicrosSinceEpoch next =
      clock_->NowMicros() +
      BackoffDelay(options_.backoff, options_.backoff_cap, attempt).count() * 1000;
  int dead = 0;
  Status s = RunFenced([&](pqxx::dbtransaction& tx) {
    pqxx::result r = tx.exec_params(
        "UPDATE msg_event SET attempts = attempts + 1, error_class = 'KAFKA_PERMANENT', "
        "last_error = $2, next_attempt_at = $3::timestamptz, "
        "state = CASE WHEN attempts + 1 >= $4 THEN 'DEAD' ELSE 'PENDING' END "
        "WHERE event_id = ANY($1::bigint[]) AND state = 'PENDING' RETURNING event_key, state",
        PgArrayLiteral(ids), BoundUtf8(error, kMaxErrorChars), PgTimestamp(next),
        options_.max_attempts);
    for (const auto& row : r) {
      if (row[1].as<std::string>() == "DEAD") {
        ++dead;
        Logger("dispatch")
            ->error("{}", WithTrace(row[0].as<std::string>(),
                                    "event DEAD after " + std::to_string(attempt) + " attempts (" +
                                        options_.target + "): " + error));
      }
    }
  });
  if (!s.ok()) return s;
  dead_total_ += dead;
  if (dead == 0) {
    Logger("dispatch")
        ->warn("{}",
               WithTrace(events.front().event_key, "permanent publish error, attempt " +
                                                       std::to_string(attempt) + ": " + error));
  }
  return dead;
}

Status Dispatcher::RunFenced(const std::function<void(pqxx::dbtransaction&)>& fn, EpochCheck how) {
  if (options_.log_uuid.empty()) return pg_->Run(fn);
  return msgx::RunFenced(pg_, options_.pipeline, epoch_, options_.log_uuid, fn, how);
}

DispatchStep Dispatcher::Stall(const Status& outage) {
  stalled_ = true;
  DispatchStep step;
  step.kind = DispatchStep::Kind::kStalled;
  step.error = outage.message();
  return step;
}

Result<DispatchStep> Dispatcher::StepSingle() {
  auto head = NextHead();
  if (!head.ok()) {
    if (head.status().error_class() == ErrorClass::kInfra) return Stall(head.status());
    return head.status();
  }
  DispatchStep step;
  if (head->empty()) return step;  // kIdle
  const size_t read_size = head->size();
  if (Status s = ReconcileIfDue(); !s.ok()) {
    return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
  }
  if (Status s = SkipDelivered(&*head); !s.ok()) {
    return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
  }
  if (head->empty()) {
    step.kind = DispatchStep::Kind::kSent;  // all of it was in Kafka already
    return step;
  }
  auto gate = mirror_offset_();
  if (!gate.ok()) {
    if (gate.status().error_class() == ErrorClass::kInfra) return Stall(gate.status());
    return gate.status();
  }
  const MicrosSinceEpoch now = clock_->NowMicros();
  const size_t head_size = head->size();  // after SkipDelivered
  std::vector<Event> batch;
  for (auto& e : *head) {
    if (e.next_attempt_micros > now) {
      if (batch.empty()) {
        step.kind = DispatchStep::Kind::kWaitingHead;
        step.until_micros = e.next_attempt_micros;
        return step;
      }
      break;
    }
    if (e.state_version > *gate) {
      if (batch.empty()) {
        step.kind = DispatchStep::Kind::kGated;
        return step;
      }
      break;
    }
    batch.push_back(std::move(e));
  }

  std::vector<OutgoingMessage> msgs;
  msgs.reserve(batch.size());
  for (auto& e : batch) msgs.push_back(ToMessage(e));
  // A full batch (a backlog): the next head is read while this one is in
  // Kafka (docs/dispatch.md#the-next-head-is-read-while-a-batch-is-in-kafka).
  if (options_.prefetch_head && static_cast<int>(batch.size()) >= options_.claim_limit) {
    StartPrefetch(batch);
  }
  auto published = PublishWithProgress(msgs, batch);
  if (!published.ok() || !published->committed) DropPrefetch();
  if (!published.ok()) return published.status();
  PublishResult r = std::move(published.value());
  if (r.committed) {
    step.kind = DispatchStep::Kind::kSent;
    step.sent = static_cast<int>(batch.size());
    step.drained = batch.size() == head_size && static_cast<int>(read_size) < options_.claim_limit;
    Status s = StartMark(std::move(batch));
    if (!s.ok()) return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
    return step;
  }
  if (!r.permanent_index) return Stall(r.outage);
  // The resends below mark on pg_, one at a time: the last batch's update
  // ends first.
  if (Status s = FinishMark(); !s.ok()) {
    return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
  }

  // A permanent error: resend one at a time up to the culprit, so that only
  // the event that is really at fault is charged.
  const size_t k = *r.permanent_index;
  for (size_t i = 0; i <= k && i < batch.size(); ++i) {
    PublishResult one = r;
    if (batch.size() > 1) {
      auto alone = PublishWithProgress({msgs[i]}, {batch[i]});
      if (!alone.ok()) return alone.status();
      one = std::move(alone.value());
    }
    if (one.committed) {
      Status s = MarkSentAfterCommit({batch[i]});
      if (!s.ok())
        return s.error_class() == ErrorClass::kInfra ? Result<DispatchStep>(Stall(s)) : s;
      ++step.sent;
      continue;
    }
    if (!one.permanent_index) return Stall(one.outage);
    auto dead = Charge({batch[i]}, one.permanent_error);
    if (!dead.ok()) return dead.status();
    step.kind = DispatchStep::Kind::kCharged;
    step.dead = *dead;
    step.error = one.permanent_error;
    return step;
  }
  step.kind = DispatchStep::Kind::kSent;  // the culprit went through alone
  return step;
}

}  // namespace msgx
