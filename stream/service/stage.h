// Stage: one background loop of `msgx run` (capture, intake, fold, mirror,
// applier, each dispatcher, each job), reduced to its step. The StageRunner
// (stream/service/stage_runner.h) does the rest once for all of them: the
// waiting and wake-ups, the outage backoff, the leadership gate, the health
// entry, the metrics and the exit status (docs/architecture.md#the-stage-runner).
//
// A step does one bounded unit of work and says what happened:
//   kProgressed  it did work and there may be more: step again at once;
//   kIdle        nothing to do: wait for a wake-up or the stage's idle wait;
//   kWaitUntil   nothing to do before the clock reads `until_micros` (a held
//                head, a batching window, a daily job's time), or a wake-up;
//   kStalled     an outage of a service it needs (`reason` says which): back
//                off by the stage's schedule; nothing is charged to any item;
//   kFailed      a bug (`reason`): this stage stops, the others go on, and
//                `msgx run` exits 1 when it stops.
// Items that fail permanently (a bad message, a rejected event) are charged by
// the stage itself and are progress, not failures of the stage.
//
// Thread-safety: the runner calls Step() from one thread at a time;
// Figures() may be called from any thread while Step() runs.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "base/status.h"

namespace msgx {

struct StepOutcome {
  enum class Kind : std::uint8_t { kProgressed, kIdle, kWaitUntil, kStalled, kFailed };

  Kind kind = Kind::kIdle;
  MicrosSinceEpoch until_micros = 0;  // kWaitUntil: when to step again
  std::string reason;                 // kStalled, kFailed; kWaitUntil: what it waits for

  static StepOutcome Progressed() { return {Kind::kProgressed, 0, {}}; }
  static StepOutcome Idle() { return {Kind::kIdle, 0, {}}; }
  static StepOutcome WaitUntil(MicrosSinceEpoch t, std::string why = {}) {
    return {Kind::kWaitUntil, t, std::move(why)};
  }
  static StepOutcome Stalled(std::string why) { return {Kind::kStalled, 0, std::move(why)}; }
  static StepOutcome Failed(std::string why) { return {Kind::kFailed, 0, std::move(why)}; }
  // The outcome of a step that returned `s` with no other result: OK is
  // progress, kInfra an outage, any other class a bug.
  static StepOutcome FromStatus(const Status& s);
};

// A stage's place in the drain (StageRunner::BeginDrain): kStopAtDrain
// stops when the drain begins (capture, intake, the jobs: they take new
// rows); a stage of order n >= 0 drains once every stage of a lower order
// (kStopAtDrain included) has ended.
inline constexpr int kStopAtDrain = -1;

// What the runner needs to know of a stage besides its step.
struct StagePolicy {
  bool needs_leadership = false;  // steps only while this process leads
  int drain_order = kStopAtDrain;
  Millis idle_wait{1000};       // an idle stage's wait when nobody wakes it
  std::vector<Millis> backoff;  // outage backoff steps (base/backoff.h)
  Millis backoff_cap{30'000};

  // A stage that polls every `poll_interval` when idle and, stalled, backs
  // off from `poll_interval` doubling up to 30 s
  // (docs/configuration.md#backoff).
  static StagePolicy Polling(Millis poll_interval, bool needs_leadership,
                             int drain_order = kStopAtDrain) {
    return {needs_leadership, drain_order, poll_interval, {poll_interval}, Millis(30'000)};
  }
};

// One named figure of a stage's health entry ("offset", "sent", "dead").
using StageFigures = std::vector<std::pair<std::string, std::int64_t>>;

class Stage {
 public:
  virtual ~Stage() = default;
  virtual StepOutcome Step() = 0;
  // Appends the stage's own figures for /status. Default: none.
  virtual void Figures(StageFigures* out) const { (void)out; }
};

}  // namespace msgx
