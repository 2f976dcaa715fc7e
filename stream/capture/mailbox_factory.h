// MakeMailbox: the Mailbox adapter mailbox.url's scheme names:
// postgresql:// or postgres:// -> PgMailbox, mysql:// or mariadb:// ->
// MariaDbMailbox (docs/operations.md#running-against-mariadbmysql).
// A URL that does not parse is kConfig. `clock` (real time, not owned)
// spaces MariaDB's INNODB_TRX reads.
#pragma once

#include <memory>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "stream/capture/mailbox.h"

namespace msgx {

Result<std::unique_ptr<Mailbox>> MakeMailbox(const Config& config, const Clock* clock);

}  // namespace msgx
