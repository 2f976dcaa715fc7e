// Dispatcher: delivers one target's outbox rows (msg_event) to Kafka, in
// event_id order, exactly once for read_committed consumers
// (docs/dispatch.md#delivery-guarantees; issues 6 and 20).
//
// Order. One dispatcher per target, under the single-writer lock; it is the
// only claimer (no SKIP LOCKED). The head is the lowest undelivered
// event_id of the target. A batch is the longest run from the head whose
// events are
//   - due (next_attempt_at empty or not in the future), and
//   - mirrored: state_version <= the Redis mirror's offset
//     (docs/dispatch.md#the-mirror-before-dispatch-gate).
// It stops at the first event that is not; nothing overtakes the head.
//
// Publishing. The batch goes through the Publisher as one unit (one Kafka
// transaction). Then:
//   - committed: the batch becomes SENT in one transaction, "the SENT
//     update": one delivered range (outbox_delivery) for its events never
//     replayed, and a SENT mark with sent_at on each replayed one
//     (stream/pg/outbox_delivery.h; the rows of the range keep their
//     PENDING and are SENT in msg_event_state); with overlap_sent_update
//     and a full batch it runs on a second connection while the next
//     Step() reads (leaving those events out) and sends the next batch,
//     and that step waits for it after its own commit; any other step
//     waits for it before returning
//     (docs/dispatch.md#the-sent-update-overlaps-the-next-batch); with
//     prefetch_head and a full batch, the next head was read on a third
//     connection while the batch was in Kafka
//     (docs/dispatch.md#the-next-head-is-read-while-a-batch-is-in-kafka);
//   - outage: nothing is charged; Step() returns kStalled (stalled() is
//     true until a publish succeeds), the caller backs off, and the next
//     Step() retries the same head;
//   - permanent error at event k of a batch of several: the events up to k
//     are resent one at a time, so only the culprit is charged: attempts+1,
//     last_error, next_attempt_at = now + backoff; at max-attempts it becomes
//     DEAD (the DLQ), logged at ERROR and counted.
//
// KAFKA:schd (aggregate = true). Events are claimed into a batch when the
// head run reaches flush-limit events, or max-batch-bytes of uncompressed
// JSON, or flush-period has passed since the last successful flush (the
// batch clock advances only on success). Membership is stored in
// msg_event.batch_id (= the batch's first event_id) before the first send,
// so a retried batch has the same id and contents. One Kafka message carries
// the JSON array of the latest payload per FLID, under the fixed key
// "schedule". A failure backs off the whole batch; exhausted, the whole
// batch goes DEAD.
//
// Exactly once (with a progress_topic; docs/dispatch.md#exactly-once). Each
// batch's transaction ends with a progress record, key progress_key, value
// the DeliveryPosition of the highest non-replay event delivered so far
// (stream/dispatch/delivery_position.h). Before it sends anything after its
// first Step, an epoch change, a publish outage (the commit's outcome may be
// unknown) or a failed SENT update, the dispatcher reconciles: Prepare()
// (no older transaction of its id can still commit), then ReadProgress()
// (read_committed); the high-water is the greater of that and what it has
// committed itself. While it cannot be read nothing is sent (kStalled,
// nothing charged). Every PENDING event that is not a replay and is at or
// below the high-water is marked SENT without being sent (counted in
// msgx_dispatch_reconciled_total{target}); for KAFKA:schd an open batch
// whose non-replay members are all at or below it is marked whole, its
// replay members included (they were in the same message). Replays of DEAD
// events never move the high-water and are never skipped by it: they are
// delivered at least once.
//
// Headers: msgx-event-id (event_key, or "schd-batch:<id>"), msgx-mailbox-id,
// msgx-type (the event_type: UPSERT|DELETE, or SCHEDULE for a batch), and
// msgx-replay: 1 when the event was returned from DEAD by an operator.
//
// Metrics, labelled {target}: the histograms msgx_dispatch_latency_seconds
// (an event's msg_event.created_at to its acknowledgement by Kafka, taken
// when it is marked SENT) and msgx_e2e_latency_seconds (the mailbox row's
// received_at, an instant: capture applies mailbox.time-zone,
// docs/capture.md#mailbox-time, to the same acknowledgement; the applier
// copies it onto the event as msg_event.received_at (V7); events without it
// are left out). Both use this dispatcher's Clock; negative spans count as 0.
//
// Thread-safety: not thread-safe; one thread drives Step().
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/metrics.h"
#include "base/result.h"
#include "base/task_thread.h"
#include "stream/dispatch/delivery_position.h"
#include "stream/dispatch/publisher.h"
#include "stream/pg/outbox_delivery.h"
#include "stream/pg/pg_leadership.h"
#include "stream/pg/pg_session.h"

namespace msgx {

struct DispatcherOptions {
  std::string target;  // KAFKA:msg | KAFKA:schd | KAFKA:ref
  std::string topic;
  // The most events in one batch (one Kafka transaction, one SENT update).
  // 2,000: a drain pays the per-transaction costs a quarter as often as at
  // 500 (docs/performance.md#the-batch-size-of-a-dispatcher); below it a
  // batch is whatever the head run holds, so latency at low rates is as
  // before.
  int claim_limit = 2000;
  int max_attempts = 5;
  std::vector<Millis> backoff{Millis{1000}, Millis{2000}, Millis{4000}, Millis{8000},
                              Millis{16000}};
  Millis backoff_cap{60'000};
  bool aggregate = false;  // KAFKA:schd
  Millis flush_period{3000};
  int flush_limit = 500;
  std::int64_t max_batch_bytes = 900'000;
  // The leadership fence (docs/commit-protocol.md): with a log_uuid, every
  // write to msg_event checks the epoch given by set_epoch() in its own
  // transaction, so a stale leader's write fails and nothing it does lands.
  // Empty: unfenced (tests of the dispatcher alone).
  std::string pipeline = "main";
  std::string log_uuid;
  // Exactly once: the progress topic (kafka.topics.progress) and this
  // dispatcher's key in it ("<log uuid>/<target>", see ProgressKey). Empty
  // topic: no progress record and no reconcile (at least once). Tests and
  // bench/ only (bench/dispatch_bench.cc measures the record's cost with
  // it): the service always sets it, from kafka.topics.progress, which the
  // configuration refuses to leave empty (it must be a topic name).
  std::string progress_topic;
  std::string progress_key;
  // KAFKA:msg and KAFKA:ref: the SENT update of a full batch (claim_limit
  // events, a backlog) runs on a second connection while the next batch is
  // read and sent, and Step() returns before it ends; any other step waits
  // for it (docs/dispatch.md#the-sent-update-overlaps-the-next-batch).
  // False: each step waits for its own (tests that look at the rows after
  // one step).
  bool overlap_sent_update = true;
  // KAFKA:msg and KAFKA:ref: while a full batch is in Kafka, the next head
  // is read on a third connection
  // (docs/dispatch.md#the-next-head-is-read-while-a-batch-is-in-kafka).
  bool prefetch_head = true;
  // The options of `target` ("KAFKA:msg" …) from the configuration; the
  // progress key is ProgressKey(log_uuid, target).
  static DispatcherOptions ForTarget(const Config& config, const std::string& target,
                                     const std::string& log_uuid = "");
  static std::string ProgressKey(const std::string& log_uuid, const std::string& target) {
    return log_uuid + "/" + target;
  }
  // The LIMIT of the head query: flush_limit for KAFKA:schd's batches,
  // claim_limit otherwise.
  int head_limit() const { return aggregate ? flush_limit : claim_limit; }
};

// Reads the Redis mirror's offset (the mirror-before-dispatch gate); -1 when
// nothing is mirrored.
using MirrorOffsetFn = std::function<Result<std::int64_t>()>;

struct DispatchStep {
  enum class Kind {
    kSent,         // a batch was delivered
    kCharged,      // a permanent error was charged (maybe DEAD)
    kIdle,         // nothing pending
    kWaitingHead,  // the head is backing off until `until_micros`
    kGated,        // the head is not mirrored yet (the mirror gate)
    kBatching,     // KAFKA:schd: collecting until flush-period
    kStalled,      // outage: the caller backs off (its runner's schedule)
  };
  Kind kind = Kind::kIdle;
  int sent = 0;
  int dead = 0;
  // kSent: the head read held every event the target had pending (fewer
  // than the claim limit) and all of them went: nothing is left until the
  // applier (or the mirror) wakes the stage, so it need not read again.
  bool drained = false;
  MicrosSinceEpoch until_micros = 0;
  Millis retry_after{0};  // kBatching: until the flush period ends
  std::string error;
};

struct OutboxCounts {
  std::int64_t pending = 0;
  std::int64_t dead = 0;
};

class Dispatcher {
 public:
  // REQUIRES: pg, publisher, clock outlive the dispatcher.
  Dispatcher(PgSession* pg, Publisher* publisher, MirrorOffsetFn mirror_offset, Clock* clock,
             DispatcherOptions options);

  // One round: claim, publish, record. Never sleeps; the caller waits as
  // the returned step says. kInternal means a bug (stop with an alarm).
  // With overlap_sent_update, a kSent step of a full batch may return
  // before its SENT update has ended (sent_total() counts it at the next
  // step); any other step returns with none in flight.
  Result<DispatchStep> Step();

  // The epoch granted by PgLeadership; 0 means not leader, and a fenced
  // dispatcher then stalls "not leader" without writing anything.
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }

  // The target's PENDING and DEAD rows now (an unfenced read).
  Result<OutboxCounts> CountOutbox();

  // The SQL of `target`'s head read ($1 the limit, $2 and $3 what it
  // leaves out: HeadSkip's floor and replayed ids; the target is a literal
  // in the text, so that the generic plan of the prepared statement uses
  // the target's partial index, stream/pg/prepared.h) and of CountOutbox
  // ($1 the target), for EXPLAIN in tests and bench/. Each
  // reads only its target's undelivered (or DEAD) rows through an index,
  // never the delivered ones: from the delivered position up in the
  // target's PENDING index (migrations/V6__outbox_pending_indexes.sql), and
  // replayed ones below it (V8). Separate counts, not one `state IN
  // ('PENDING', 'DEAD')`: planned with the statistics of an all-PENDING
  // outbox, that one was a scan of the whole table.
  static std::string HeadQuery(std::string_view target, bool open_batch_only, bool unbatched_only);
  static std::string CountOutboxQuery();

  bool stalled() const { return stalled_; }
  // Heads read while the batch before them was in Kafka, and used.
  std::int64_t prefetched_heads() const { return prefetched_heads_; }
  std::int64_t sent_total() const { return sent_total_; }
  std::int64_t dead_total() const { return dead_total_; }
  // Events found already delivered at reconcile and marked SENT unsent.
  std::int64_t reconciled_total() const { return reconciled_total_; }

 private:
  struct Event {
    std::int64_t event_id = 0;
    std::string event_key;
    std::string partition_key;
    std::string event_type;
    std::int64_t state_version = 0;
    std::string payload;
    int attempts = 0;
    MicrosSinceEpoch next_attempt_micros = 0;  // 0 = due
    std::int64_t source_msg_id = 0;
    bool replayed = false;
    std::int64_t batch_id = 0;  // 0 = none
    MicrosSinceEpoch created_micros = 0;
    MicrosSinceEpoch received_micros = 0;  // msg_event.received_at; 0 = unknown
  };

  static std::vector<std::int64_t> EventIds(const std::vector<Event>& events);
  // What `events`, delivered in one Kafka transaction, record
  // (stream/pg/outbox_delivery.h): the range of those never replayed, and
  // the replayed ones by id.
  static Delivery DeliveryOf(const std::vector<Event>& events);
  // This dispatcher's fence for RecordDeliveryFenced.
  DeliveryFence Fence() const;
  // Reads the progress record when a reconcile is due (see the header);
  // an outage is kInfra.
  Status ReconcileIfDue();
  // True when `e` is not a replay and is at or below the high-water.
  Result<bool> AlreadyDelivered(const Event& e) const;
  // Moves the events of `events` that are AlreadyDelivered out of it and
  // marks them SENT (fenced); the rest keep their order.
  Status SkipDelivered(std::vector<Event>* events);
  // Marks `events` SENT without sending them, counted as reconciled.
  Status MarkDelivered(const std::vector<Event>& events);
  // The highest position of a non-replay event of `events`, or nothing.
  static Result<std::optional<DeliveryPosition>> HighestPosition(const std::vector<Event>& events);
  // Publishes `msgs` (the messages of `events`) as one transaction, ending
  // with the progress record when `events` has a non-replay event; on
  // commit the high-water moves. A refused progress record is an outage.
  Result<PublishResult> PublishWithProgress(std::vector<OutgoingMessage> msgs,
                                            const std::vector<Event>& events);
  // MarkSent after a committed publish (the failpoint dispatch.committed
  // sits between the two); a failure makes a reconcile due.
  Status MarkSentAfterCommit(const std::vector<Event>& events);
  // KAFKA:msg and KAFKA:ref after a committed publish: waits for the last
  // batch's SENT update (FinishMark), then starts this one's on mark_pg_
  // (the failpoint dispatch.committed first). Step() waits for it unless
  // overlap_sent_update.
  Status StartMark(std::vector<Event> events);
  // Waits for the SENT update in flight, if any, and counts it; a failure
  // makes a reconcile due (the events stay PENDING until the high-water
  // marks them) and is returned.
  Status FinishMark();
  Result<DispatchStep> StepSingle();
  Result<DispatchStep> StepAggregate();
  // What a head read leaves out: the events of the batches in flight (sent
  // or being sent, their SENT update not committed). Above the delivered
  // position everything up to `floor`, the highest of their event_ids: a
  // batch is a prefix of the head, so no other undelivered event lies
  // below it there (an operator's replay in that span is read once the
  // position passed it, by the replayed branch). Below the position, the
  // replayed ones among them by id.
  struct HeadSkip {
    std::int64_t floor = 0;
    std::vector<std::int64_t> replayed_ids;
  };
  // One head read, as values that can cross to another thread.
  struct HeadRead {
    std::string sql;
    int limit = 0;
    HeadSkip skip;
    std::string pipeline;
    std::int64_t epoch = 0;
    std::string log_uuid;  // empty: unfenced
  };
  static HeadSkip SkipOf(const std::vector<Event>& a, const std::vector<Event>& b);
  // The event in `row`'s columns from `first` on (kHeadColumns' order).
  static Event EventOfRow(const pqxx::row& row, int first);
  static Result<std::vector<Event>> ReadHead(PgSession* pg, const HeadRead& read);
  HeadRead HeadReadOf(bool open_batch_only, bool unbatched_only, HeadSkip skip) const;
  // The head on pg_, leaving out the SENT update in flight.
  Result<std::vector<Event>> LoadHead(bool open_batch_only, bool unbatched_only);
  // KAFKA:msg and KAFKA:ref with prefetch_head, before a full batch
  // (`sending`) goes to Kafka: starts reading the head that follows it and
  // the SENT update in flight on head_pg_. NextHead takes it; DropPrefetch
  // waits for it and throws it away (the batch did not commit).
  void StartPrefetch(const std::vector<Event>& sending);
  void DropPrefetch();
  // The prefetched head if there is one and it was read under this epoch,
  // else LoadHead.
  Result<std::vector<Event>> NextHead();
  // The Kafka record of `e`, taking its payload: past this point a batch's
  // events are kept for their ids and times only (the SENT update, the
  // latencies, a charge), and the record holds the only copy.
  OutgoingMessage ToMessage(Event& e) const;
  OutgoingMessage BatchMessage(const std::vector<Event>& members) const;
  Status MarkSent(const std::vector<Event>& events);
  // After a SENT update of `events` committed: the counters, the latency
  // histograms, and the end of a stall.
  void CountSent(const std::vector<Event>& events);
  // The latency histograms of events acknowledged at `acked`.
  void ObserveLatencies(const std::vector<Event>& events, MicrosSinceEpoch acked);
  // Charges a permanent failure to `events`; returns how many became DEAD.
  Result<int> Charge(const std::vector<Event>& events, const std::string& error);
  DispatchStep Stall(const Status& outage);
  // pg_->Run(fn), first checking the epoch inside the same transaction when
  // fenced (a stale epoch is kInfra and rolls back everything); `how`:
  // kRead for a transaction that only reads (stream/pg/pg_leadership.h).
  Status RunFenced(const std::function<void(pqxx::dbtransaction&)>& fn,
                   EpochCheck how = EpochCheck::kLock);

  PgSession* pg_;
  Publisher* publisher_;
  MirrorOffsetFn mirror_offset_;
  Clock* clock_;
  DispatcherOptions options_;

  bool stalled_ = false;
  std::int64_t epoch_ = 0;
  bool reconcile_due_ = true;  // before the first send
  std::int64_t reconciled_epoch_ = 0;
  std::optional<DeliveryPosition> high_water_;
  std::int64_t reconciled_total_ = 0;
  std::int64_t sent_total_ = 0;
  std::int64_t dead_total_ = 0;
  std::int64_t last_flush_mono_ = 0;  // batch clock (monotonic micros)
  Histogram* dispatch_latency_;
  Histogram* e2e_latency_;
  Counter* reconciled_counter_;
  // The SENT update in flight (StartMark), run on mark_thread_.
  std::unique_ptr<PgSession> mark_pg_;
  std::vector<Event> marking_;  // its events (the next head leaves them out)
  std::future<Status> marked_;  // valid while one is in flight
  // The head read ahead (StartPrefetch), run on head_thread_.
  std::unique_ptr<PgSession> head_pg_;
  std::future<Result<std::vector<Event>>> prefetched_;
  std::int64_t prefetch_epoch_ = 0;
  std::int64_t prefetched_heads_ = 0;
  // Each started at its first use, and declared after the sessions their
  // tasks use: destroyed first, each finishes its task, then joins.
  std::unique_ptr<TaskThread> mark_thread_;
  std::unique_ptr<TaskThread> head_thread_;
};

}  // namespace msgx
