#include "base/service_notify.h"

#include <systemd/sd-daemon.h>

#include <string>

namespace msgx {
namespace {

bool Send(const std::string& state) { return sd_notify(0, state.c_str()) > 0; }

}  // namespace

bool NotifyReady() { return Send("READY=1"); }
bool NotifyStopping() { return Send("STOPPING=1"); }
bool NotifyStatus(std::string_view text) { return Send("STATUS=" + std::string(text)); }

}  // namespace msgx
