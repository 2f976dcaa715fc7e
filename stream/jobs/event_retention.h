// EventRetention: the sent-event compaction job (docs/jobs.md#event-retention).
//
// One Step() runs ONE transaction that
//   1. checks this process's epoch and log UUID (CheckEpoch: a stale leader
//      deletes nothing);
//   2. deletes up to `batch` events marked SENT row by row (before V8, and
//      replays) whose sent_at is older than the injected clock's now minus
//      `retention`, oldest first by (sent_at, event_id), the order of the
//      partial index msg_event_sent_idx, so a batch reads only the rows it
//      deletes (no table scan, row locks only, and SKIP LOCKED so that it
//      never waits for a dispatcher's transaction);
//   3. then, while the batch is not full, the oldest delivered ranges
//      (stream/pg/outbox_delivery.h) sent before that cutoff, whole: the
//      range's rows still PENDING and never replayed, then the range
//      (outbox_delivery_sent_idx). The newest range of a target stays, with
//      its rows, whatever its age: it holds the target's delivered position.
// DEAD and undelivered events are never touched: DEAD ones are the
// dead-letter queue, undelivered ones are still a dispatcher's. A delivered
// event is no dispatcher's any more: nothing reads it again.
//
// Idempotent and safe under kill -9: each batch commits on its own, and a
// batch that did not commit deleted nothing.
//
// Errors: kInfra (PostgreSQL unreachable, read-only, a stale epoch) with
// nothing deleted; anything else is a bug.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "stream/pg/pg_session.h"

namespace msgx {

struct EventRetentionOptions {
  std::string pipeline = "main";
  std::string log_uuid;
  Millis retention{7LL * 24 * 3'600'000};
  int batch = 1000;
};

class EventRetention {
 public:
  // REQUIRES: pg and clock outlive the job.
  EventRetention(PgSession* pg, const Clock* clock, EventRetentionOptions options);

  // Deletes one batch as `epoch`'s leader; returns the number of events
  // deleted, a range counted by its `events` (less than options.batch:
  // nothing more is due now; a batch may end past it by part of a range).
  Result<int> Step(std::int64_t epoch);
  // Events due for deletion now, counted up to `cap`.
  Result<std::int64_t> Backlog(std::int64_t cap);

 private:
  // now - retention, as a timestamptz literal.
  std::string Cutoff() const;

  PgSession* pg_;
  const Clock* clock_;
  EventRetentionOptions options_;
};

}  // namespace msgx
