// Test helpers that read a Mailbox directly (no capture, no log).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "stream/capture/mailbox.h"

namespace msgx::testing {

// Every row's received time by id, from the first 100 rows (-1: none);
// a failed read fails the test.
std::map<std::int64_t, MicrosSinceEpoch> ReceivedById(Mailbox& mailbox);

// Every id of the mailbox table cminmsgs at `url` (postgresql://,
// mysql:// or mariadb://), ascending, read through the Mailbox adapter the
// URL's scheme names; a failed read fails the test.
std::vector<std::int64_t> MailboxIds(const std::string& url);

}  // namespace msgx::testing
