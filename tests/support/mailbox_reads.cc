#include "tests/support/mailbox_reads.h"

#include <gtest/gtest.h>

#include <vector>

namespace msgx::testing {

std::map<std::int64_t, MicrosSinceEpoch> ReceivedById(Mailbox& mailbox) {
  std::vector<MailboxRow> rows;
  Status s = mailbox.ReadAfter(0, 100, &rows);
  EXPECT_TRUE(s.ok()) << s.ToString();
  std::map<std::int64_t, MicrosSinceEpoch> out;
  for (const MailboxRow& r : rows) out[r.id] = r.received_at.value_or(-1);
  return out;
}

}  // namespace msgx::testing
