#include "tests/support/mailbox_reads.h"

#include <gtest/gtest.h>

#include <vector>

#include "base/config.h"
#include "stream/capture/mailbox_factory.h"

namespace msgx::testing {

std::map<std::int64_t, MicrosSinceEpoch> ReceivedById(Mailbox& mailbox) {
  std::vector<MailboxRow> rows;
  Status s = mailbox.ReadAfter(0, 100, &rows);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::map<std::int64_t, MicrosSinceEpoch> out;
  for (const MailboxRow& r : rows) out[r.id] = r.received_at.value_or(-1);
  return out;
}

std::vector<std::int64_t> MailboxIds(const std::string& url) {
  Config config;
  config.mailbox_url = url;
  auto mailbox = MakeMailbox(config, SystemClock::Default());
  EXPECT_TRUE(mailbox.ok()) << mailbox.status().ToString();
  std::vector<std::int64_t> ids;
  if (!mailbox.ok()) return ids;
  for (;;) {
    std::vector<MailboxRow> rows;
    Status s = (*mailbox)->ReadAfter(ids.empty() ? 0 : ids.back(), 1000, &rows);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok() || rows.empty()) return ids;
    for (const MailboxRow& r : rows) ids.push_back(r.id);
  }
}

}  // namespace msgx::testing
