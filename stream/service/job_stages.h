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
//                          is due.
#pragma once

#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "stream/pg/leadership_keeper.h"
#include "stream/service/stage_runner.h"

namespace msgx {

struct JobDeps {
  const Config* config = nullptr;
  std::string log_uuid;
  LeadershipKeeper* leader = nullptr;
  const Clock* clock = nullptr;
};

inline constexpr const char* kEventRetentionStage = "job event-retention";

// Adds the job stages to `runner`. REQUIRES: postgres.url is set; deps and
// the runner outlive the stages.
void AddJobStages(const JobDeps& deps, StageRunner* runner);

}  // namespace msgx
