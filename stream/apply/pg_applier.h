// PgApplier: moves the fold's pending batches into PostgreSQL, in offset
// order, as many consecutive batches per transaction as fit under
// ApplierOptions::max_rows (docs/commit-protocol.md#output-stages; the
// tables: docs/schema.md).
//
// Each Step() runs ONE transaction that
//   1. reads X = pipeline.applied_offset. X is re-read every step, so when
//      PostgreSQL goes back (failover to an asynchronous standby, a
//      point-in-time restore) the applier re-applies from there by itself;
//   2. checks this process's epoch and log UUID (CheckEpoch; a stale leader
//      writes nothing): with the row lock when there is something to apply,
//      without it when idle (then the transaction only reads, and its
//      commit costs no WAL flush);
//   3. takes the pending batch covering X+1 from the state store, and the
//      batches after it while the outcomes and events taken stay under
//      max_rows (the first batch is always taken whole), and writes them:
//      proc_state upserts (one row per message: the latest), msg_event
//      inserts in log order, ref_master upserts and deletes (one per key:
//      the latest), flight_hst inserts, one fold_batch row per batch;
//   4. moves pipeline.applied_offset from X to the last batch's last offset.
//
// Every write is idempotent, so a redo (a crash after commit, a restored
// database, a batch that straddles X) is harmless:
//   proc_state  replaced only by an outcome from a later log offset: an
//               ARCHIVED shadow (stream/jobs/proc_state_archive.h) is never
//               replaced from an offset at or below its log_offset (a
//               re-applied batch cannot bring it back), only by a later
//               decision (a replay); mark_state is never touched, and
//               backfill_at is never touched and
//               backfill_next_at is kept once set (every outcome is
//               terminal, so the mark's intent lands with it:
//               docs/jobs.md#processed-mark);
//   msg_event   ON CONFLICT (event_key) DO NOTHING; event_id follows the
//               batch's event order; events at or below X are left out (the
//               database had them; the event-retention job may have deleted
//               them since, and they must not come back as PENDING);
//   ref_master  changed only by a state_version at least the row's;
//   flight_hst  ON CONFLICT (flid, state_version) DO NOTHING;
//   fold_batch  ON CONFLICT DO NOTHING, then the digests must agree.
//
// Seed mode's held head (docs/fold.md#seed-mode) is not in the log: the
// service shows it with ShowFailedHead, a proc_state row in state FAILED
// without a log_offset, which the message's terminal outcome replaces
// whenever it lands (an outcome from the log replaces a row without one),
// and which never replaces a row that an outcome from the log has reached.
//
// Errors:
//   - kInfra (PostgreSQL unreachable, stale epoch, RocksDB read error):
//     ApplyStep::kStalled with the text; nothing was written, nothing is
//     charged, the caller backs off and calls Step() again;
//   - anything else is returned as an error Status and the caller stops
//     with an alarm: SQLSTATE 22/23 (kInternal, a bug: the fold bounds what
//     it writes), a fold_batch digest mismatch (kInternal), a pending batch
//     that is gone (kInternal), a pipeline row of another log (kConfig).
//
// Thread-safety: not thread-safe; one thread drives Step(). The StateStore
// may be written concurrently by the fold (its reads are thread-safe).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "state/state_store.h"
#include "stream/fold/failed_head.h"
#include "stream/pg/pg_session.h"

namespace msgx {

struct ApplierOptions {
  std::string pipeline = "main";
  std::string log_uuid;
  // Outcomes + events one transaction gathers from consecutive pending
  // batches: more batches are taken while fewer rows than this are taken.
  // 1 applies one batch per transaction. The service's value:
  // docs/commit-protocol.md#output-stages.
  size_t max_rows = 5000;
};

struct ApplyStep {
  enum class Kind {
    kApplied,  // one batch [first, last] was committed
    kIdle,     // PostgreSQL holds everything the state store has
    kStalled,  // outage, stale epoch or not leader: retry after a backoff
  };
  Kind kind = Kind::kIdle;
  std::int64_t first = 0;  // kApplied: the range of the batches committed
  std::int64_t last = 0;
  int outcomes = 0;  // kApplied: rows sent (a redo may have changed fewer)
  int events = 0;
  std::string error;  // kStalled: why
  int batches = 0;    // kApplied: pending batches committed
  // kApplied: statements whose plain INSERT met a row already there and
  // that ran again as an upsert (docs/commit-protocol.md#output-stages).
  int upserts = 0;
  // kApplied: the targets the committed events are for, each once, in the
  // order first seen (the dispatchers to wake).
  std::vector<std::string> event_targets;
  // kApplied: the batches reached the state store's applied offset as read
  // at the start of the step (nothing more to apply until the fold commits).
  bool caught_up = false;
};

class PgApplier {
 public:
  // REQUIRES: pg and store outlive the applier.
  PgApplier(PgSession* pg, const StateStore* store, ApplierOptions options);
  PgApplier(const PgApplier&) = delete;
  PgApplier& operator=(const PgApplier&) = delete;

  // The epoch granted by PgLeadership; 0 (the default) means not leader,
  // and Step() then returns kStalled "not leader" without touching
  // PostgreSQL.
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }

  // Applies the pending batches of one transaction (see the header comment).
  Result<ApplyStep> Step();

  // Writes `head` as its message's proc_state row: state FAILED, attempts,
  // next_attempt_at (NULL: being exhausted), error_class, last_error and
  // updated_at (the failure's time), in one transaction fenced by the epoch.
  // A row with a log_offset (a terminal outcome) is left as it is. kInfra
  // for an outage, a stale epoch or none (not leader): nothing written.
  Status ShowFailedHead(const FailedHead& head);

  // pipeline.applied_offset as last seen (after a commit: the new value);
  // -1 when unknown or nothing applied.
  std::int64_t pg_offset() const { return pg_offset_; }

 private:
  PgSession* pg_;
  const StateStore* store_;
  ApplierOptions options_;
  std::int64_t epoch_ = 0;
  std::int64_t pg_offset_ = -1;
};

}  // namespace msgx
