// What starting any throwaway test server shares (tests/support/servers.h).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "base/status.h"

namespace msgx::testing {

// Picks a free loopback port into *port and calls launch(); a free port may
// be taken between probing and binding, so it tries up to `attempts` times.
// Returns the last failure, or OK.
Status LaunchOnFreePort(int* port, const std::function<Status()>& launch, int attempts = 5);

// A server that cannot start is a fatal test error: records the failure,
// prints "<server>: <what>" and aborts (the cleanup hooks stop what started).
[[noreturn]] void FailServerStart(std::string_view server, const std::string& what);

}  // namespace msgx::testing
