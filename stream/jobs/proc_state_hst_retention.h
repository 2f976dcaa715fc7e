// ProcStateHstRetention: the archived outcomes' retention
// (docs/jobs.md#archive-retention).
//
// One Step() runs ONE fenced transaction (RunFenced: a stale or deposed
// leader deletes nothing) holding ONE statement that deletes up to `batch`
// rows of proc_state_hst whose archived_at is older than the injected
// clock's now minus `retention`, oldest first by (archived_at, msg_id), the
// order of the index proc_state_hst_archived_idx (migration V5), FOR UPDATE
// SKIP LOCKED. Each batch reads the index after the last row this job
// deleted, in this run or one before: the deleted rows' index entries stay
// until a vacuum (months apart on a table that keeps 400 days), and
// reading from the start would step over all of them, batch after batch and
// run after run. Once `rescan_every` (by the injected clock) the next batch
// reads from the start again, so a row skipped while another transaction
// held it, or put back behind that position (a restored database), goes
// then; and so does the first batch of a process.
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
#include <utility>

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
  // How often a batch reads from the oldest row again (above); > 0.
  Millis rescan_every{3'600'000};
};

class ProcStateHstRetention {
 public:
  // REQUIRES: pg and clock outlive the job; options.retention > 0 (0, keep
  // forever, means no job at all).
  ProcStateHstRetention(PgSession* pg, const Clock* clock, ProcStateHstRetentionOptions options);

  // Deletes one batch as `epoch`'s leader; returns the number deleted (less
  // than options.batch: nothing more is due now, and the run ends).
  Result<int> Step(std::int64_t epoch);
  // Rows due now, counted up to `cap`, from where the next batch reads (not
  // a row behind it until the next rescan). Not fenced (read-only).
  Result<std::int64_t> Backlog(std::int64_t cap);

 private:
  // The key of a history row in the index's order.
  struct Position {
    MicrosSinceEpoch archived_at = 0;
    std::int64_t msg_id = 0;
  };

  // now - retention, as a timestamptz literal.
  std::string Cutoff() const;
  // Where the next batch reads from, as the key it reads after (archived_at
  // as a timestamptz literal, msg_id): `after_`, or ("-infinity", 0) for the
  // oldest row when the rescan is due, which it then restarts.
  std::pair<std::string, std::int64_t> From();

  PgSession* pg_;
  const Clock* clock_;
  ProcStateHstRetentionOptions options_;
  // The last row this job deleted since it last read from the oldest.
  std::optional<Position> after_;
  // When a batch last read from the oldest row; nullopt: never.
  std::optional<MicrosSinceEpoch> rescanned_at_;
};

}  // namespace msgx
