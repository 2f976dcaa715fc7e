// The jobs of `msgx run` as runner stages (docs/jobs.md). Each needs
// leadership (the runner steps it only while this process leads), fences
// every write with the epoch, works in bounded batches, and reports its
// last run, next run, rows done and backlog in its health entry (/status)
// and as metrics labelled {job="<name>"}:
//   msgx_job_rows_total, msgx_job_backlog, msgx_job_last_run_seconds,
//   msgx_job_next_run_seconds.
// Built so far:
//   "job event-retention"  SENT events older than pipeline.event-retention
//                          are deleted (stream/jobs/event_retention.h): a run
//                          every minute (every half retention if shorter, at
//                          least every second), batches of 1,000 until none
//                          is due;
//   "job daily-sweep"      once per airport day at history.sweep-at, one
//                          HISTORY_SWEEP and one IDENTITY_EXPIRY command
//                          appended to the log (stream/jobs/daily_sweep.h),
//                          then the fold is woken.
#pragma once

#include <functional>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "state/airport_zone.h"
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
  std::function<void()> appended;  // the daily sweep appended (wakes the fold)
};

inline constexpr const char* kEventRetentionStage = "job event-retention";
inline constexpr const char* kDailySweepStage = "job daily-sweep";

// Adds the job stages to `runner`. REQUIRES: postgres.url is set; deps and
// the runner outlive the stages. kConfig when history.sweep-at is malformed.
Status AddJobStages(const JobDeps& deps, StageRunner* runner);

}  // namespace msgx
