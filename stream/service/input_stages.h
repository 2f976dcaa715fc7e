// The input stages of `msgx run` as runner stages (stream/service/stage.h):
//   CaptureStage  mailbox rows → the log (stream/capture/capture.h);
//   IntakeStage   msgx_command rows → the log (stream/capture/command_intake.h).
// Each calls `appended` when it put records in the log, so the fold wakes.
// Capture polls again at once after a full batch, then by its PollCadence;
// the intake at once after a full batch, else at pipeline.poll-interval.
// CaptureStage's figures: "watermark", and "lag" (Capture::Backlog(), read
// at each poll that caught up and every 10th poll while it reads on;
// msgx_stage_lag_records{stage="capture"}).
// Errors: kInfra is a stall (the mailbox or PostgreSQL is unreachable, the
// disk is full); any other class is a bug (a corrupt log, a gap).
//
// Thread-safety: Step() from the runner's thread; Figures() from any.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "base/metrics.h"
#include "stream/capture/capture.h"
#include "stream/capture/command_intake.h"
#include "stream/capture/poll_cadence.h"
#include "stream/service/stage.h"

namespace msgx {

class CaptureStage final : public Stage {
 public:
  // REQUIRES: capture outlives the stage.
  // The next poll's time comes from `cadence` (stream/capture/poll_cadence.h)
  // on `clock` (not owned).
  CaptureStage(Capture* capture, std::function<void()> appended, PollCadence cadence,
               const Clock* clock);
  StepOutcome Step() override;
  void Figures(StageFigures* out) const override;

 private:
  Capture* capture_;
  std::function<void()> appended_;
  PollCadence cadence_;
  const Clock* clock_;
  Gauge* watermark_;
  Counter* late_;
  std::atomic<std::int64_t> watermark_seen_{0};
  static constexpr int kBacklogEveryBusyPolls = 10;
  int busy_polls_ = 0;
  std::atomic<std::int64_t> lag_{-1};  // Capture::Backlog(); -1: not read yet
};

class IntakeStage final : public Stage {
 public:
  // REQUIRES: intake outlives the stage.
  IntakeStage(CommandIntake* intake, std::function<void()> appended);
  StepOutcome Step() override;
  void Figures(StageFigures* out) const override;

 private:
  CommandIntake* intake_;
  std::function<void()> appended_;
  std::atomic<std::int64_t> appended_total_{0};
};

}  // namespace msgx
