// The jobs of `msgx run` as runner stages (docs/jobs.md). Each needs
// leadership (the runner steps it only while this process leads), fences
// every write with the epoch, works in bounded batches, and reports its
// last run, next run, rows done and backlog in its health entry (/status)
// and as metrics labelled {job_name="<name>"}:
//   msgx_job_rows_total, msgx_job_backlog, msgx_job_last_run_seconds,
//   msgx_job_next_run_seconds.
// Built so far:
//   "job event-retention"  SENT events older than pipeline.event-retention
//                          are deleted (stream/jobs/event_retention.h): a run
//                          every minute (every half retention if shorter, at
//                          least every second), batches of 1,000 until none
//                          is due;
//   "job proc-state-archive"
//                          terminal proc_state rows whose mark is settled
//                          and whose updated_at is older than
//                          proc-state.archive-after move to proc_state_hst,
//                          leaving ARCHIVED shadows
//                          (stream/jobs/proc_state_archive.h): a run every
//                          minute (every half archive-after if shorter, at
//                          least every second), batches of 1,000 until none
//                          is due;
//   "job proc-state-hst-retention"
//                          proc_state_hst rows archived longer ago than
//                          proc-state.hst-retention are deleted
//                          (stream/jobs/proc_state_hst_retention.h), on the
//                          same schedule as the archive's, with its
//                          retention; not added when the retention is 0;
//   "job processed-mark"   terminal outcomes' mailbox rows get their
//                          processed mark, from NULL only, and proc_state
//                          records how each settled
//                          (stream/jobs/processed_mark.h): a run every
//                          pipeline.backfill-backoff-ms (30 s), batches of
//                          1,000 until none is left; a refused mark stalls
//                          it (ProcessedMarkPolicy); figures also "overdue"
//                          and "abandoned", metrics also msgx_job_overdue and
//                          msgx_job_abandoned. Added only when mailbox.url
//                          is set;
//   "job daily-sweep"      once per airport day at history.sweep-at, one
//                          HISTORY_SWEEP and one IDENTITY_EXPIRY command
//                          appended to the log (stream/jobs/daily_sweep.h),
//                          then the fold is woken. AppendDueSweep() runs its
//                          step once at start-up, before capture.
#pragma once

#include <functional>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "state/airport_zone.h"
#include "state/decision_settings.h"
#include "state/log_store.h"
#include "stream/pg/leadership_keeper.h"
#include "stream/service/stage_runner.h"

namespace msgx {

struct JobDeps {
  const Config* config = nullptr;
  std::string log_uuid;
  LeadershipKeeper* leader = nullptr;
  const Clock* clock = nullptr;
  LogStore* log = nullptr;
  const AirportZone* zone = nullptr;
  const DecisionSettings* settings = nullptr;  // as recorded in the log
  std::function<void()> appended;              // the daily sweep appended (wakes the fold)
};

inline constexpr const char* kEventRetentionStage = "job event-retention";
inline constexpr const char* kDailySweepStage = "job daily-sweep";
inline constexpr const char* kProcessedMarkStage = "job processed-mark";
inline constexpr const char* kProcStateArchiveStage = "job proc-state-archive";
inline constexpr const char* kProcStateHstRetentionStage = "job proc-state-hst-retention";

// The processed mark's runner policy: leader only; a run every
// pipeline.backfill-backoff-ms; stalled (a refused or unreachable mailbox,
// msgx's database down), it backs off from pipeline.backfill-backoff-ms
// doubling to pipeline.backfill-backoff-cap-ms (30 s, 1 min, 2 min, 4 min,
// 8 min, 15 min, 15 min, … with the defaults; base/backoff.h).
StagePolicy ProcessedMarkPolicy(const Config& c);

// Adds the job stages to `runner`. REQUIRES: postgres.url is set; deps and
// the runner outlive the stages. kConfig when history.sweep-at is malformed.
Status AddJobStages(const JobDeps& deps, StageRunner* runner);

// The daily sweep's step, once, on the caller's thread: the day's commands
// when their time has come and they are not in the log. `msgx run` calls it
// at start-up, when it leads, after the settings are recorded and before
// capture starts, so that the start-up order of the log (SETTINGS, the day's
// SWEEP and EXPIRE, then the captured rows) does not depend on which stage
// is first; a log restored from a backup taken in between gets the same
// records at the same offsets again (docs/operations.md#backup-and-restore).
// Nothing when history.sweep-at is off. kConfig when it is malformed, kInfra
// when the log cannot be read or written.
Status AppendDueSweep(const JobDeps& deps);

}  // namespace msgx
