// Test helpers that read a Mailbox directly (no capture, no log).
#pragma once

#include <cstdint>
#include <map>

#include "base/clock.h"
#include "stream/capture/mailbox.h"

namespace msgx::testing {

// Every row's received time by id, from the first 100 rows (-1: none);
// a failed read fails the test.
std::map<std::int64_t, MicrosSinceEpoch> ReceivedById(Mailbox& mailbox);

}  // namespace msgx::testing
