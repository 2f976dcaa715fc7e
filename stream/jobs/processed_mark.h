// ProcessedMark: the processed-mark job (docs/jobs.md#processed-mark). For
// every terminal proc_state row whose mark is still to do (mark_state NULL),
// it writes the mailbox row's processed column and status column, from NULL
// only, and then records in proc_state how the mark settled.
//
// One Step() is one bounded batch, in three parts:
//   1. Take: ONE fenced transaction of msgx's database (RunFenced: a stale
//      or deposed leader takes nothing) reads up to `batch` rows to do,
//      oldest intent first by (backfill_next_at, msg_id), the order of the
//      partial index proc_state_mark_todo_idx, so a batch reads only them.
//      This is the leadership check before the batch: the mailbox write
//      itself cannot be fenced.
//   2. Mark: ONE mailbox statement (MailboxMarks::MarkFromNull) writes
//      processed = the row's backfill_next_at (the first terminal outcome's
//      decision time; updated_at if it is NULL) and status =
//      options.status, only where processed is NULL.
//   3. Settle: ONE fenced transaction records each row's settlement
//      (stream/jobs/mark_settle.h): mark_state and mark_reason, with
//      backfill_at (MARKED, MARKED_ELSEWHERE) or backfill_abandoned_at and
//      backfill_abandoned_reason (ABANDONED) at the injected clock's now,
//      only on rows whose mark_state is still NULL.
// Mailbox first, then msgx's database: a death between the two leaves
// mailbox rows marked and proc_state rows to do; the next batch asks for the
// same marks, writes nothing (from-null), finds its own mark and settles the
// rows MARKED. A stale leader that wrote a mailbox mark before it noticed
// wrote exactly what the leader would write. The failpoint
// "mark.after_mailbox" sits between 2 and 3.
//
// Errors: kInfra (msgx's database or the mailbox unreachable, read-only or
// refusing, a stale epoch) with nothing charged to any row: the caller
// backs off and calls Step() again; anything else is a bug.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "stream/jobs/mailbox_marks.h"
#include "stream/pg/pg_session.h"

namespace msgx {

struct ProcessedMarkOptions {
  std::string pipeline = "main";
  std::string log_uuid;
  std::string status = "PROCESSED";       // mailbox.processed-status
  Millis overdue{30LL * 24 * 3'600'000};  // pipeline.overdue-backfill
  int batch = 1000;
};

// A batch taken and marked in the mailbox, not settled yet.
struct MarkBatch {
  std::vector<MarkRequest> rows;
  std::vector<MailboxMarkSeen> seen;
};

// What one batch settled.
struct MarkStepResult {
  int taken = 0;      // rows of the batch (< options.batch: nothing more to do now)
  int marked = 0;     // MARKED (written now, or msgx's own earlier mark)
  int elsewhere = 0;  // MARKED_ELSEWHERE
  int abandoned = 0;  // ABANDONED
  int unsettled = 0;  // left to do (found unmarked after the write)
};

// The job's figures, each counted up to a cap.
struct MarkCounts {
  std::int64_t backlog = 0;         // rows to do
  std::int64_t overdue = 0;         // rows to do whose intent is older than options.overdue
  std::int64_t oldest_overdue = 0;  // msg_id of the oldest overdue row (0: none)
  std::int64_t abandoned = 0;       // the open abandon list (mark_state ABANDONED)
};

class ProcessedMark {
 public:
  // REQUIRES: pg, mailbox and clock outlive the job.
  ProcessedMark(PgSession* pg, MailboxMarks* mailbox, const Clock* clock,
                ProcessedMarkOptions options);

  // Takes, marks and settles one batch as `epoch`'s leader.
  Result<MarkStepResult> Step(std::int64_t epoch);
  // Parts 1 and 2 of Step (a test drives them apart to die in between).
  Result<MarkBatch> TakeAndMark(std::int64_t epoch);
  // Part 3 of Step.
  Result<MarkStepResult> Settle(std::int64_t epoch, const MarkBatch& batch);
  // Reads the figures, each up to `cap`. Not fenced (read-only).
  Result<MarkCounts> Count(std::int64_t cap);

 private:
  PgSession* pg_;
  MailboxMarks* mailbox_;
  const Clock* clock_;
  ProcessedMarkOptions options_;
};

}  // namespace msgx
