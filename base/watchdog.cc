#include "base/watchdog.h"

#include <algorithm>
#include <utility>

namespace msgx {

WatchdogPinger::WatchdogPinger(std::chrono::microseconds interval, const Clock* clock,
                               std::function<void()> ping)
    : interval_(interval), clock_(clock), ping_(std::move(ping)) {}

std::int64_t WatchdogPinger::Due() const {
  return last_ping_ < 0 ? 0 : last_ping_ + interval_.count() / 2;
}

bool WatchdogPinger::Tick(bool alive) {
  const std::int64_t now = clock_->MonotonicMicros();
  if (!enabled() || now < Due()) return false;
  if (!alive) {
    refused_ = now;
    return false;
  }
  ping_();
  last_ping_ = now;
  refused_ = -1;
  return true;
}

std::chrono::milliseconds WatchdogPinger::UntilDue() const {
  if (!enabled()) return std::chrono::hours(1);
  const std::int64_t next = refused_ >= 0 ? refused_ + interval_.count() / 10 : Due();
  const std::int64_t left = std::max<std::int64_t>(next - clock_->MonotonicMicros(), 0);
  return std::chrono::milliseconds((left + 999) / 1000);
}

}  // namespace msgx
