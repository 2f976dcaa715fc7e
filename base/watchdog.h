// WatchdogPinger: when to send systemd's WATCHDOG=1 (WatchdogSec= in the
// unit, docs/operations.md#the-watchdog). The manager restarts the service
// when no ping came for the interval; msgx pings at half of it, and only
// while the caller says the process is alive (`msgx run`: no stage of the
// stage runner stuck in one step for longer than the interval), so a hung
// runner stops pinging and is restarted.
//
// Tick(alive) pings (through the injected function) when a ping is due and
// `alive`: due at the first Tick, then half the interval after the last
// ping. A Tick that is due but not alive pings nothing, and the ping stays
// due: the next alive Tick pings at once. UntilDue() is how long the caller
// may wait before the next Tick: until the ping is due, or, while it is due
// and was refused, a tenth of the interval (so a caller never spins). With
// an interval of 0 (no watchdog) nothing is ever due.
// Time is the injected clock's monotonic reading.
//
// Thread-safety: one thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>

#include "base/clock.h"

namespace msgx {

class WatchdogPinger {
 public:
  // REQUIRES: clock outlives the pinger.
  WatchdogPinger(std::chrono::microseconds interval, const Clock* clock,
                 std::function<void()> ping);
  bool enabled() const { return interval_.count() > 0; }
  // Pings when due and `alive`; returns whether it pinged.
  bool Tick(bool alive);
  // Until the next ping is due (0 when due now); an hour when disabled.
  std::chrono::milliseconds UntilDue() const;

 private:
  std::int64_t Due() const;  // monotonic micros when the next ping is due

  std::chrono::microseconds interval_;
  const Clock* clock_;
  std::function<void()> ping_;
  std::int64_t last_ping_ = -1;  // monotonic micros; -1: never
  std::int64_t refused_ = -1;    // the last due Tick that was not alive; -1: none since the ping
};

}  // namespace msgx
