// RunPollLoop: the loop around a one-step poller (Capture::Poll,
// CommandIntake::Poll) in `msgx run`.
//
// Behaviour:
//   - a step that reports more work runs again at once;
//   - otherwise the loop waits `poll_interval` (Stopper::WaitFor, so SIGTERM
//     or a Notify() ends the wait);
//   - a kInfra failure (an outage of PostgreSQL or the disk) is a stall, not
//     an error: logged at WARN when it starts and at INFO when it ends,
//     flagged in `health`, retried with capped exponential backoff from
//     poll_interval up to `max_backoff`, for as long as it lasts
//     (docs/crash-safety.md#outages);
//   - any other failure (kInternal: a corrupt log, a bug) ends the loop and
//     is returned, so the service can stop loudly.
// Returns OK when the stopper stops.
//
// Thread-safety: runs on the calling thread; `health` may be read from any
// thread.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "base/result.h"
#include "base/stopper.h"

namespace msgx {

// What /readyz and /metrics read about one loop.
struct PollLoopHealth {
  std::atomic<bool> stalled{false};
  std::atomic<std::int64_t> stalls{0};  // outages seen
};

struct PollLoopOptions {
  std::string component;  // logger name, e.g. "capture"
  std::chrono::milliseconds poll_interval{1000};
  std::chrono::milliseconds max_backoff{30'000};
};

// `step` does one poll and returns whether to poll again at once.
Status RunPollLoop(const std::function<Result<bool>()>& step, const PollLoopOptions& options,
                   Stopper* stopper, PollLoopHealth* health = nullptr);

// The backoff after `failures` consecutive outages (1 = the first).
std::chrono::milliseconds PollBackoff(const PollLoopOptions& options, int failures);

}  // namespace msgx
