#include "base/service_notify.h"

#include <systemd/sd-daemon.h>

#include <cstdint>
#include <string>

namespace msgx {
namespace {

bool Send(const std::string& state) { return sd_notify(0, state.c_str()) > 0; }

}  // namespace

bool NotifyReady() { return Send("READY=1"); }
bool NotifyStopping() { return Send("STOPPING=1"); }
bool NotifyStatus(std::string_view text) { return Send("STATUS=" + std::string(text)); }
bool NotifyWatchdog() { return Send("WATCHDOG=1"); }

std::chrono::microseconds WatchdogInterval() {
  std::uint64_t usec = 0;
  if (sd_watchdog_enabled(0, &usec) <= 0) return std::chrono::microseconds(0);
  return std::chrono::microseconds(static_cast<std::int64_t>(usec));
}

}  // namespace msgx
