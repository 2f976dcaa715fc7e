// StageRunner: drives every background stage of `msgx run` (Stage,
// stream/service/stage.h), each on a thread of its own or on the caller's.
// It is the one place for (docs/architecture.md#the-stage-runner):
//   - waiting: an idle stage waits its policy's idle_wait, a kWaitUntil one
//     until its time; Wake(name) ends either wait early, and a wake-up that
//     arrives while the stage steps ends its next wait at once;
//   - outages: a kStalled step backs off by BackoffDelay (base/backoff.h)
//     over the stage's own schedule, logged once at WARN when the stall
//     starts and once at INFO when it ends;
//   - bugs: a kFailed step (or an exception out of Step) logs an ALARM and
//     stops that stage only; the others go on, /readyz says which failed,
//     and ExitStatus() is 1;
//   - leadership: a stage that needs it does not step while `leading`
//     returns false, and each stall of such a stage is reported to
//     `leader_stalled` (with its reason), so that a stale leader steps
//     down at its first refused write (docs/operations.md#who-writes);
//   - health: one entry per stage (state, reason, since, steps, stalls,
//     time in step, the stage's figures), and the same as metrics:
//     msgx_stage_steps_total, msgx_stage_stalls_total,
//     msgx_stage_step_seconds_total, msgx_stage_stalled, msgx_stage_failed,
//     each labelled {stage="<name>"}; and, from Start() to Stop(), at each
//     scrape msgx_stage_lag_records{stage} for every stage whose figures
//     have a "lag" (>= 0: the records waiting for it);
//   - the drain (BeginDrain, docs/operations.md#stopping): stages of policy
//     drain_order kStopAtDrain stop after their current step; a stage of
//     order n >= 0 ends "drained" at its first idle step that began after
//     every stage of a lower order had ended (so it has written everything
//     they left for it); a stage that cannot (stalled, waiting, not
//     leading) ends undrained when the bound passes, and its waits are cut
//     at the bound; Undrained() names what was left;
//   - hangs: Stuck(limit) names the stages whose current step has run
//     longer than `limit` (the systemd watchdog stops pinging then);
//   - names: a stage's thread is named ThreadNameOf(its name), for top -H,
//     perf and crash reports (docs/operations.md#a-crash-report).
// Time and waiting go through the injected Clock and StageWaiter, so tests
// drive the runner without sleeping.
//
// Thread-safety: Add() before Start(); Wake(), Health(), Problems(),
// failed() and ExitStatus() from any thread; Stop() from one thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/metrics.h"
#include "base/stopper.h"
#include "stream/service/stage.h"

namespace msgx {

// The name of a stage's thread: the stage name's last word, which tells
// the stages apart within the 15 bytes a thread name keeps ("applier",
// "KAFKA:msg" for "dispatch KAFKA:msg", "event-retention" for
// "job event-retention"); base/thread_name.h cuts a longer one.
std::string_view ThreadNameOf(std::string_view stage_name);

// How the runner waits. REQUIRES of an implementation: WaitUntil returns
// when the clock reads `deadline`, at once when `wake` was notified since
// the last wait (consuming it), and false once `wake` is stopped.
class StageWaiter {
 public:
  virtual ~StageWaiter() = default;
  virtual bool WaitUntil(Stopper* wake, MicrosSinceEpoch deadline) = 0;
};

// Waits on the Stopper's condition variable for the clock's distance to the
// deadline.
class SystemStageWaiter final : public StageWaiter {
 public:
  explicit SystemStageWaiter(const Clock* clock) : clock_(clock) {}
  bool WaitUntil(Stopper* wake, MicrosSinceEpoch deadline) override;

 private:
  const Clock* clock_;
};

enum class StageState : std::uint8_t {
  kStarting,    // not stepped yet
  kRunning,     // its last step progressed
  kIdle,        // nothing to do
  kWaiting,     // waiting until a time (reason: for what)
  kStalled,     // an outage (reason)
  kNotLeading,  // needs leadership and this process does not lead
  kFailed,      // stopped by a bug (reason)
  kStopped,     // stopped by the service
};
// "starting", "running", "idle", "waiting", "stalled", "not-leading",
// "failed", "stopped".
std::string_view StageStateName(StageState s);

// A snapshot of one stage's health entry.
struct StageHealth {
  std::string name;
  StageState state = StageState::kStarting;
  std::string reason;
  MicrosSinceEpoch since_micros = 0;  // when `state` last changed
  bool needs_leadership = false;
  std::int64_t steps = 0;
  std::int64_t stalls = 0;  // stall episodes (not failed steps)
  std::int64_t step_micros = 0;
  StageFigures figures;
};

class StageRunner {
 public:
  struct Options {
    const Clock* clock = nullptr;
    StageWaiter* waiter = nullptr;
    Stopper* service = nullptr;     // its Stop() stops every stage
    std::function<bool()> leading;  // empty: this process always leads
    // Called, from the stage's thread, with the reason of every stalled
    // step of a stage that needs leadership; may be empty.
    std::function<void(std::string_view reason)> leader_stalled;
    Metrics* metrics = nullptr;  // null: Metrics::Global()
    // Notified whenever a stage's loop ends (drained, stopped, failed), so
    // a supervisor waiting for the drain wakes; may be null.
    Stopper* ended = nullptr;
  };
  explicit StageRunner(Options options);
  ~StageRunner();
  StageRunner(const StageRunner&) = delete;
  StageRunner& operator=(const StageRunner&) = delete;

  // Adds a stage under a unique `name`. With `on_caller_thread`, Start()
  // leaves it to a Run(name) call (the unit tests step stages so).
  // REQUIRES: before Start().
  void Add(std::string name, std::unique_ptr<Stage> stage, StagePolicy policy,
           bool on_caller_thread = false);
  // Starts a thread for each stage not on the caller's thread.
  void Start();
  // Runs stage `name`'s loop on the calling thread until it is stopped or
  // fails. REQUIRES: `name` was added.
  void Run(std::string_view name);
  // Ends the wait of stage `name` (now, or at its next wait). Unknown names
  // are ignored, so a producer may wake a stage that is not configured.
  void Wake(std::string_view name);
  // Stops every stage after its current step and joins their threads.
  void Stop();
  // Begins the drain, bounded by `bound` on the clock's monotonic reading:
  // stops the kStopAtDrain stages after their current step and wakes the
  // others. Once only; from any thread.
  void BeginDrain(Millis bound);
  bool draining() const { return draining_.load(); }
  // True when every stage's loop has ended (each added stage was started
  // or run).
  bool AllEnded() const;
  // The stages of drain_order >= 0 that have not drained: "name undrained
  // (why, was state: reason)" for one that ended so, e.g. "dispatch
  // KAFKA:msg undrained (the drain bound passed, was stalled: broker down)";
  // "name (state: reason)" for one still running or failed.
  std::vector<std::string> Undrained() const;
  // The stages whose current step began more than `limit` ago (by the
  // clock's monotonic reading).
  std::vector<std::string> Stuck(Millis limit) const;

  std::vector<StageHealth> Health() const;
  // One line per stage that is not fit to serve: stalled, failed, or not
  // leading ("applier: not leading"), for /readyz.
  std::vector<std::string> Problems() const;
  bool failed() const { return failed_.load(); }
  // 1 when any stage failed, else 0.
  int ExitStatus() const { return failed() ? 1 : 0; }

 private:
  struct Entry;
  Entry* Find(std::string_view name) const;
  void Loop(Entry* e);
  // Loop's body; returns when the stage ends, with the reason to show.
  void Steps(Entry* e);
  // The drain: whether its bound has passed; whether every stage of a lower
  // order than `e`'s has ended; `t` cut at the bound.
  bool DrainTimedOut() const;
  bool UpstreamEnded(const Entry* e) const;
  MicrosSinceEpoch CutAtDrainBound(MicrosSinceEpoch t) const;
  void SetState(Entry* e, StageState s, std::string reason);
  // The "lag" figure of every stage, as msgx_stage_lag_records (a scrape hook).
  void PublishLag() const;

  Options options_;
  std::vector<std::unique_ptr<Entry>> entries_;
  std::vector<std::thread> threads_;
  std::atomic<bool> failed_{false};
  std::atomic<bool> draining_{false};
  std::atomic<std::int64_t> drain_deadline_{0};  // monotonic micros, once draining_
  int lag_hook_ = -1;                            // the scrape hook's id while started
};

}  // namespace msgx
