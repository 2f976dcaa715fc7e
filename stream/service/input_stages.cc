#include "stream/service/input_stages.h"

#include <utility>

namespace msgx {

CaptureStage::CaptureStage(Capture* capture, std::function<void()> appended, PollCadence cadence,
                           const Clock* clock)
    : capture_(capture),
      appended_(std::move(appended)),
      cadence_(cadence),
      clock_(clock),
      watermark_(
          Metrics::Global().GetGauge("msgx_capture_watermark", "Mailbox id capture has passed")),
      late_(Metrics::Global().GetCounter("msgx_capture_late_total",
                                         "Rows captured after their gap was skipped")) {}

StepOutcome CaptureStage::Step() {
  auto out = capture_->Poll();
  if (!out.ok()) return StepOutcome::FromStatus(out.status());
  if (out->appended + out->late > 0 && appended_) appended_();
  if (out->late > 0) late_->Add(out->late);
  watermark_seen_ = capture_->progress().watermark;
  watermark_->Set(static_cast<double>(watermark_seen_.load()));
  // The backlog costs the mailbox one index lookup: at each poll that
  // caught up, and every kBacklogEveryBusyPolls polls while it reads on.
  if (!out->more || ++busy_polls_ % kBacklogEveryBusyPolls == 0) {
    if (auto backlog = capture_->Backlog(); backlog.ok()) lag_ = *backlog;
  }
  if (out->more) return StepOutcome::Progressed();
  const Millis wait = cadence_.Next(out->appended + out->late + out->skipped_ids > 0);
  if (wait >= cadence_.idle()) return StepOutcome::Idle();  // the runner's idle wait
  return StepOutcome::WaitUntil(
      clock_->NowMicros() + std::chrono::duration_cast<std::chrono::microseconds>(wait).count(),
      "the next mailbox poll");
}

void CaptureStage::Figures(StageFigures* out) const {
  out->emplace_back("watermark", watermark_seen_.load());
  if (const std::int64_t lag = lag_.load(); lag >= 0) out->emplace_back("lag", lag);
}

IntakeStage::IntakeStage(CommandIntake* intake, std::function<void()> appended)
    : intake_(intake), appended_(std::move(appended)) {}

StepOutcome IntakeStage::Step() {
  auto out = intake_->Poll();
  if (!out.ok()) return StepOutcome::FromStatus(out.status());
  if (out->appended > 0) {
    appended_total_ += out->appended;
    if (appended_) appended_();
  }
  return out->more ? StepOutcome::Progressed() : StepOutcome::Idle();
}

void IntakeStage::Figures(StageFigures* out) const {
  out->emplace_back("appended", appended_total_.load());
}

}  // namespace msgx
