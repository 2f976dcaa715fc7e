#include "stream/service/fold_stage.h"

#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "base/log.h"

namespace msgx {
namespace {

bool HasQuarantine(const std::vector<FoldInput>& batch) {
  for (const auto& r : batch) {
    if (r.command && std::holds_alternative<QuarantineCommand>(*r.command)) return true;
  }
  return false;
}

}  // namespace

FoldStage::FoldStage(Deps deps)
    : d_(std::move(deps)),
      applied_(d_.fold->applied_offset()),
      g_applied_(Metrics::Global().GetGauge("msgx_fold_applied_offset",
                                            "Last log offset folded into state")),
      g_log_next_(Metrics::Global().GetGauge("msgx_log_next_offset", "Records in the log")),
      g_free_(Metrics::Global().GetGauge("msgx_state_dir_free_bytes",
                                         "Bytes available to msgx on the state.dir filesystem")),
      h_batch_(Metrics::Global().GetHistogram("msgx_fold_batch_records",
                                              "Log records folded in one step", SizeBuckets())) {}

StepOutcome FoldStage::Step() {
  Fold& fold = *d_.fold;
  if (d_.reserve != nullptr) {
    if (auto available = d_.reserve->Available()) g_free_->Set(static_cast<double>(*available));
  }
  // After a restart (or a wait cut short), a head still backing off waits.
  if (auto head = d_.head_retry->head(); head && *head == fold.applied_offset() + 1) {
    if (!d_.head_retry->Due(*head)) {
      return StepOutcome::WaitUntil(d_.head_retry->retry_at(),
                                    "seed mode: head at offset " + std::to_string(*head));
    }
  }
  if (d_.rebuild != nullptr) {
    std::vector<std::int64_t> cuts;
    if (Status g = d_.rebuild->BeforeStep(fold.applied_offset(), &cuts); !g.ok()) {
      return StepOutcome::FromStatus(g);
    }
    if (!cuts.empty()) fold.set_cut_offsets(std::move(cuts));
  }
  std::vector<FoldInput>& batch = batch_;
  batch.clear();
  Status s = d_.source->ReadBatch(static_cast<std::uint64_t>(fold.applied_offset() + 1),
                                  d_.batch_max, &batch);
  if (s.ok() && HasQuarantine(batch)) s = d_.source->BuildQuarantineIndex();
  if (s.ok() && !batch.empty()) s = fold.Process(batch);
  if (!s.ok()) return StepOutcome::FromStatus(s);
  if (!batch.empty()) h_batch_->Observe(static_cast<double>(batch.size()));
  if (const auto& held = fold.held()) return OnHeld(*held);
  if (fold.applied_offset() != applied_.load() && d_.folded) d_.folded();
  if (d_.rebuild != nullptr) {
    bool caught_up = false;
    if (Status v = d_.rebuild->AfterStep(*d_.store, fold.applied_offset(), &caught_up); !v.ok()) {
      return StepOutcome::FromStatus(v);
    }
    if (caught_up) {
      Logger("fold")->info("rebuild caught up with PostgreSQL: {} batch digests match",
                           d_.rebuild->verified());
    }
  }
  if (auto head = d_.head_retry->head(); head && fold.applied_offset() >= *head) {
    d_.head_retry->Cleared(*head);
    if (d_.failed_heads != nullptr) d_.failed_heads->Clear();
  }
  applied_ = fold.applied_offset();
  rejected_ = fold.counters().rejected_records;
  skipped_ = fold.counters().skipped_records;
  g_applied_->Set(static_cast<double>(fold.applied_offset()));
  g_log_next_->Set(static_cast<double>(d_.log->next_offset()));
  return batch.size() < d_.batch_max ? StepOutcome::Idle() : StepOutcome::Progressed();
}

StepOutcome FoldStage::OnHeld(const HeldHead& held) {
  HeadVerdict v = d_.head_retry->Failed(held.offset);
  Logger("fold")->warn("{}", WithTrace(std::to_string(held.mailbox_id),
                                       "seed mode: FAILED (attempt " + std::to_string(v.attempts) +
                                           ") " + held.error_class + ": " + held.error));
  if (d_.failed_heads != nullptr) {
    d_.failed_heads->Post(FailedHead{held.mailbox_id, held.offset, v.attempts, v.failed_at,
                                     v.kind == HeadVerdict::Kind::kWait ? v.retry_at : 0,
                                     held.error_class, held.error});
    if (d_.head_failed) d_.head_failed();
  }
  if (v.kind == HeadVerdict::Kind::kWait) {
    return StepOutcome::WaitUntil(v.retry_at,
                                  "seed mode: head at offset " + std::to_string(held.offset));
  }
  if (v.kind == HeadVerdict::Kind::kExhaust) {
    ExhaustArgs x{static_cast<std::uint64_t>(held.offset), v.attempts, v.reason};
    auto appended = d_.log->AppendCommands(
        std::vector<LogRecordData>{LogRecordData::Command(CommandData{x, "msgx:seed-mode", 0, 0})});
    Status st = appended.ok() ? d_.source->BuildQuarantineIndex() : appended.status();
    if (!st.ok()) return StepOutcome::FromStatus(st);
  }
  return StepOutcome::Progressed();
}

void FoldStage::Figures(StageFigures* out) const {
  const std::int64_t applied = applied_.load();
  out->emplace_back("records_rejected", rejected_.load());
  out->emplace_back("records_skipped", skipped_.load());
  out->emplace_back("applied_offset", applied);
  out->emplace_back("lag", std::max<std::int64_t>(
                               0, static_cast<std::int64_t>(d_.log->next_offset()) - 1 - applied));
}

}  // namespace msgx
