// Tells the service manager where msgx run is, through sd_notify(3) from
// libsystemd (the unit is Type=notify, docs/operations.md#install):
//   NotifyReady()    READY=1, once HTTP serves: a standby or a long rebuild
//                    then is no longer subject to the start timeout;
//   NotifyStopping() STOPPING=1, when a stop (SIGTERM) begins;
//   NotifyStatus(t)  STATUS=t, a line `systemctl status` shows;
//   NotifyWatchdog() WATCHDOG=1, the keep-alive of WatchdogSec= (base/watchdog.h);
//   WatchdogInterval() the unit's WatchdogSec= as sd_watchdog_enabled(3)
//                    gives it to this process (0: no watchdog).
// Not under systemd (no NOTIFY_SOCKET), each is a no-op. Returns whether the
// manager was told. Thread-safe.
#pragma once

#include <chrono>
#include <string_view>

namespace msgx {

bool NotifyReady();
bool NotifyStopping();
bool NotifyStatus(std::string_view text);
bool NotifyWatchdog();
std::chrono::microseconds WatchdogInterval();

}  // namespace msgx
