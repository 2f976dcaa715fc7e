#include "stream/jobs/mailbox_marks.h"

#include "base/config.h"
#include "base/mariadb_url.h"
#include "codecs/time_zone.h"
#include "stream/jobs/mariadb_mailbox_marks.h"
#include "stream/jobs/pg_mailbox_marks.h"

namespace msgx {

Result<std::unique_ptr<MailboxMarks>> MakeMailboxMarks(const Config& config) {
  if (!IsMariaDbUrl(config.mailbox_url)) {
    return std::unique_ptr<MailboxMarks>(PgMailboxMarks::FromConfig(config));
  }
  auto url = ParseMariaDbUrl(config.mailbox_url);
  if (!url.ok()) return url.status();
  auto zone = TimeZone::Load(MailboxTimeZone(config));
  if (!zone.ok()) return zone.status();
  return std::unique_ptr<MailboxMarks>(
      std::make_unique<MariaDbMailboxMarks>(std::move(url).value(), config.mailbox_table,
                                            config.mailbox_columns, std::move(zone).value()));
}

}  // namespace msgx
