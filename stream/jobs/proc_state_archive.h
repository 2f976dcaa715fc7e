// ProcStateArchive: the proc_state archive job
// (docs/jobs.md#proc-state-archive).
//
// One Step() runs ONE fenced transaction (RunFenced: a stale or deposed
// leader moves nothing) holding ONE statement that moves up to `batch` rows:
//   - due: state SUCCEEDED, SKIPPED or DEAD, mark_state MARKED,
//     MARKED_ELSEWHERE or RECONCILED (never NULL, never ABANDONED), and
//     updated_at older than the injected clock's now minus `archive_after`;
//     oldest first by (updated_at, msg_id), the order of the partial index
//     proc_state_archive_due_idx (migration V4), FOR UPDATE SKIP LOCKED;
//   - the old row is copied into proc_state_hst with archived_at = now (a
//     msg_id already there, archived before a replay brought it back, is
//     replaced by the later outcome);
//   - the proc_state row becomes an ARCHIVED shadow in the same statement:
//     msg_id, identity_key, log_offset, updated_at, backfill_next_at,
//     backfill_at and mark_state stay; every other column is cleared
//     (NULL, or 0 for the counters).
// The UPDATE re-checks the due condition on the locked rows, so the move
// is conditional; one statement is atomic, so a kill -9 anywhere leaves a
// row either moved whole or not at all; a second run finds nothing due.
// The applier replaces a shadow only from a later log offset (a replay;
// stream/apply/pg_applier.h), which makes the row an ordinary outcome again.
//
// Errors: kInfra (PostgreSQL unreachable, read-only, a stale epoch) with
// nothing moved; anything else is a bug.
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

struct ProcStateArchiveOptions {
  std::string pipeline = "main";
  std::string log_uuid;
  Millis archive_after{24LL * 3'600'000};  // proc-state.archive-after
  int batch = 1000;
};

class ProcStateArchive {
 public:
  // REQUIRES: pg and clock outlive the job.
  ProcStateArchive(PgSession* pg, const Clock* clock, ProcStateArchiveOptions options);

  // Moves one batch as `epoch`'s leader; returns the number moved (less
  // than options.batch: nothing more is due now).
  Result<int> Step(std::int64_t epoch);
  // Rows due now, counted up to `cap`. Not fenced (read-only).
  Result<std::int64_t> Backlog(std::int64_t cap);

 private:
  // now - archive_after, as a timestamptz literal.
  std::string Cutoff() const;

  PgSession* pg_;
  const Clock* clock_;
  ProcStateArchiveOptions options_;
};

}  // namespace msgx
