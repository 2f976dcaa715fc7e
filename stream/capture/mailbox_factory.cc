#include "stream/capture/mailbox_factory.h"

#include "base/mariadb_url.h"
#include "codecs/time_zone.h"
#include "stream/capture/mariadb_mailbox.h"
#include "stream/capture/pg_mailbox.h"

namespace msgx {

Result<std::unique_ptr<Mailbox>> MakeMailbox(const Config& config, const Clock* clock) {
  if (!IsMariaDbUrl(config.mailbox_url)) {
    return std::unique_ptr<Mailbox>(PgMailbox::FromConfig(config));
  }
  auto url = ParseMariaDbUrl(config.mailbox_url);
  if (!url.ok()) return url.status();
  auto zone = TimeZone::Load(MailboxTimeZone(config));
  if (!zone.ok()) return zone.status();
  return std::unique_ptr<Mailbox>(
      std::make_unique<MariaDbMailbox>(std::move(url).value(), config.mailbox_table,
                                       config.mailbox_columns, clock, std::move(zone).value()));
}

}  // namespace msgx
