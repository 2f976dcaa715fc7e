// PipelineCheck: after a `msgx run` has stopped, checks that every store
// outside RocksDB says exactly what the log says (issue 5 "Happy path" and
// "Crash points"):
//   - proc_state has one row per mailbox row, equal to the state store's
//     outcome (state, class, error, prev_error, deciding offset); an
//     ARCHIVED shadow (docs/jobs.md#proc-state-archive) is compared through
//     its proc_state_hst row, which holds the outcome it was, and must be at
//     that row's log_offset;
//   - msg_event holds exactly the events of an independent re-fold of the
//     log (event_key, target, key, type, version, payload bytes): none
//     missing, none extra; event_id order follows log order per target;
//   - ref_master equals the reference rows of that re-fold, last write wins;
//   - pipeline.applied_offset and fold_batch's last digest match the state;
//   - Redis flightInfo equals the state's flights and msgx:mirror's offset
//     the state's applied offset (skipped when redis_url is empty).
// Returns the problems found, empty when consistent; each names the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace msgx::testing {

struct PipelineCheckInput {
  std::string state_dir;    // of the stopped msgx
  std::string mailbox_url;  // cminmsgs (postgresql://, mysql:// or mariadb://)
  std::string own_url;      // msgx's database
  std::string redis_url;    // "" to skip Redis
  std::string timezone = "Asia/Shanghai";
  // After a drained stop (docs/operations.md#stopping): capture stopped
  // before the mailbox's last rows, so a row never folded is not a problem
  // but counted in `unfolded` (the caller checks the fold reached the log's
  // end, so that "never folded" means "never captured").
  bool captured_only = false;
};

struct PipelineCheckResult {
  std::vector<std::string> problems;
  std::int64_t mailbox_rows = 0;
  std::int64_t outcomes = 0;
  std::int64_t unfolded = 0;  // captured_only: mailbox rows with no outcome in the state
  std::int64_t events = 0;
  std::int64_t applied_offset = -1;
};

PipelineCheckResult CheckPipeline(const PipelineCheckInput& in);

// CheckPipeline(in) as a gtest check: each problem is a failure, and so are
// an outcome count or a mailbox row count other than `rows`.
void ExpectPipelineConsistent(const PipelineCheckInput& in, std::int64_t rows);

}  // namespace msgx::testing
