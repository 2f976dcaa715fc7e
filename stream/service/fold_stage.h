// FoldStage: the fold driver of `msgx run` as a runner stage
// (stream/service/stage.h). One step reads up to batch_max log records after
// the applied offset and folds them (stream/fold/fold.h), then:
//   - seed mode (docs/fold.md#seed-mode): a head that failed again waits
//     (kWaitUntil) by HeadRetry's rule; when it runs out, the step appends an
//     EXHAUST command and the fold ends the message DEAD on its next step.
//     Each failure is posted to `failed_heads` (the applier shows it in
//     proc_state as FAILED), and the post is cleared once the head moved on;
//   - a rebuild (stream/service/rebuild_gate.h) is loaded before the step
//     (until PostgreSQL answers, the fold stalls only when the state store
//     may be a rebuild), cuts the batches where PostgreSQL's end, and
//     compares the chained digest there after it: a difference is a bug
//     (kFailed);
//   - `folded` is called when the applied offset moved, so the mirror and
//     the applier wake.
// Metrics: msgx_fold_applied_offset, msgx_log_next_offset,
// msgx_state_dir_free_bytes, and the histogram msgx_fold_batch_records (the
// records of each non-empty step); figures "applied_offset" and "lag" (log
// records not folded yet, msgx_stage_lag_records{stage="fold"}), and
// "records_rejected"/"records_skipped" (records within messages refused or
// skipped since start, docs/operations.md#fold-logs).
// A full batch is kProgressed, a short one kIdle. kInfra (the state store or
// the log cannot be read or written, a full disk included: RocksDB resumes
// writes by itself once space is back) is a stall; any other error a bug.
//
// Thread-safety: Step() from one thread; applied_offset() and Figures() from
// any.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "base/metrics.h"
#include "state/disk_reserve.h"
#include "state/log_store.h"
#include "state/state_store.h"
#include "stream/fold/failed_head.h"
#include "stream/fold/fold.h"
#include "stream/fold/head_retry.h"
#include "stream/fold/log_fold_source.h"
#include "stream/service/rebuild_gate.h"
#include "stream/service/stage.h"

namespace msgx {

class FoldStage final : public Stage {
 public:
  struct Deps {
    Fold* fold = nullptr;
    LogFoldSource* source = nullptr;
    LogStore* log = nullptr;
    StateStore* store = nullptr;
    HeadRetry* head_retry = nullptr;
    // Seed mode's held head, for the applier to show as FAILED; null: not
    // shown. `head_failed` is called after each post.
    FailedHeadBoard* failed_heads = nullptr;
    std::function<void()> head_failed;
    RebuildGate* rebuild = nullptr;  // null: no rebuild to check (no PostgreSQL)
    std::size_t batch_max = 1000;
    std::function<void()> folded;
    // Each step reports the free space of state.dir's file system
    // (msgx_state_dir_free_bytes), even while the stage stalls; null: none.
    const DiskReserve* reserve = nullptr;
  };
  // REQUIRES: every pointer but `rebuild` non-null and outliving the stage;
  // fold->Open() succeeded.
  explicit FoldStage(Deps deps);

  StepOutcome Step() override;
  void Figures(StageFigures* out) const override;
  std::int64_t applied_offset() const { return applied_.load(); }

 private:
  StepOutcome OnHeld(const HeldHead& held);

  Deps d_;
  std::atomic<std::int64_t> applied_;
  std::atomic<std::int64_t> rejected_{0};  // records refused since start
  std::atomic<std::int64_t> skipped_{0};   // records skipped since start
  Gauge* g_applied_;
  Gauge* g_log_next_;
  Gauge* g_free_;
  Histogram* h_batch_;
  // The step's records. Kept across steps so that its capacity is: a new
  // vector grew by doubling in every step, each growth a large allocation
  // (docs/fold.md#reading-the-log). Holds the last step's records until
  // the next step.
  std::vector<FoldInput> batch_;
};

}  // namespace msgx
