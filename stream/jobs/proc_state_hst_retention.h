// ProcStateHstRetention: the archived outcomes' retention
// (docs/jobs.md#archive-retention).
//
// One Step() runs ONE fenced transaction (RunFenced: a stale or deposed
// leader deletes nothing) holding ONE statement that deletes up to `batch`
// rows of proc_state_hst whose archived_at is older than the injected
// clock's now minus `retention`, oldest first by (archived_at, msg_id), the
// order of the index proc_state_hst_archived_idx (migration V5), FOR UPDATE
// SKIP LOCKED. Within a run (batches until one is short) each batch reads
// the index after the last row the batch before deleted: the deleted rows'
// index entries stay until a vacuum, and reading from the start each time
// would step over all of them, batch after batch. A short or failed batch
// ends the run, and the next run reads from the start again, so a row
// skipped while another transaction held it is found then.
//
// The ARCHIVED shadows in proc_state stay: they keep every decided message's
// identity_key and log_offset, which the applier needs (a replay still
// replaces its shadow; archived again, it inserts its history row anew). A
// kill -9 anywhere leaves a batch deleted whole or not at all; a second run
// finds nothing due.
//
// Errors: kInfra (PostgreSQL unreachable, read-only, a stale epoch) with
// nothing deleted; anything else is a bug.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "stream/pg/pg_session.h"

namespace msgx {

struct ProcStateHstRetentionOptions {
  std::string pipeline = "main";
  std::string log_uuid;
  Millis retention{400LL * 86'400'000};  // proc-state.hst-retention; > 0
  int batch = 1000;
};

class ProcStateHstRetention {
 public:
  // REQUIRES: pg and clock outlive the job; options.retention > 0 (0, keep
  // forever, means no job at all).
  ProcStateHstRetention(PgSession* pg, const Clock* clock, ProcStateHstRetentionOptions options);

  // Deletes one batch as `epoch`'s leader; returns the number deleted (less
  // than options.batch: nothing more is due now, and the run ends).
  Result<int> Step(std::int64_t epoch);
  // Rows due now, counted up to `cap`. Not fenced (read-only).
  Result<std::int64_t> Backlog(std::int64_t cap);

 private:
  // The key of a history row in the index's order.
  struct Position {
    MicrosSinceEpoch archived_at = 0;
    std::int64_t msg_id = 0;
  };

  // now - retention, as a timestamptz literal.
  std::string Cutoff() const;

  PgSession* pg_;
  const Clock* clock_;
  ProcStateHstRetentionOptions options_;
  // The last row deleted by this run's batches; empty between runs.
  std::optional<Position> after_;
};

}  // namespace msgx
