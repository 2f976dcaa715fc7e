// The settle rule of the processed mark (stream/jobs/mark_settle.h): what a
// row's mark_state becomes from what the mailbox said of it.
#include "stream/jobs/mark_settle.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

constexpr MicrosSinceEpoch kOurs = 1'700'000'000'123'456;

MailboxMarkSeen Seen(MailboxMarkSeen::Kind kind, std::optional<MicrosSinceEpoch> processed = {},
                     std::optional<std::string> status = {}) {
  MailboxMarkSeen s;
  s.id = 7;
  s.kind = kind;
  s.processed = processed;
  s.status = std::move(status);
  return s;
}

TEST(MarkSettle, WrittenNowIsMarked) {
  auto s = SettleMark({7, kOurs}, Seen(MailboxMarkSeen::Kind::kWritten), "PROCESSED");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, MarkState::kMarked);
  EXPECT_EQ(s->reason, "");
}

TEST(MarkSettle, AMissingRowIsAbandonedWithItsReason) {
  auto s = SettleMark({7, kOurs}, Seen(MailboxMarkSeen::Kind::kMissing), "PROCESSED");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, MarkState::kAbandoned);
  EXPECT_NE(s->reason.find("no longer in the mailbox"), std::string::npos);
}

TEST(MarkSettle, OurOwnEarlierMarkIsMarkedNotElsewhere) {
  auto s =
      SettleMark({7, kOurs}, Seen(MailboxMarkSeen::Kind::kFound, kOurs, "PROCESSED"), "PROCESSED");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->state, MarkState::kMarked);
  EXPECT_NE(s->reason.find("own mark"), std::string::npos);
}

TEST(MarkSettle, AnyOtherMarkIsElsewhere) {
  using K = MailboxMarkSeen::Kind;
  // Our status at another time (the legacy system marked it too), our time
  // with another status, and a time without a status.
  for (const MailboxMarkSeen& seen :
       {Seen(K::kFound, kOurs + 1, "PROCESSED"), Seen(K::kFound, kOurs - 1'000'000, "PROCESSED"),
        Seen(K::kFound, kOurs, "DONE"), Seen(K::kFound, kOurs, std::nullopt)}) {
    auto s = SettleMark({7, kOurs}, seen, "PROCESSED");
    ASSERT_TRUE(s);
    EXPECT_EQ(s->state, MarkState::kMarkedElsewhere);
    EXPECT_NE(s->reason.find("already marked"), std::string::npos) << s->reason;
  }
  auto named = SettleMark({7, kOurs}, Seen(K::kFound, kOurs, "DONE"), "PROCESSED");
  EXPECT_NE(named->reason.find("'DONE'"), std::string::npos) << named->reason;
}

TEST(MarkSettle, FoundUnmarkedIsNotSettledNow) {
  EXPECT_FALSE(SettleMark({7, kOurs}, Seen(MailboxMarkSeen::Kind::kFound, std::nullopt, "VALID"),
                          "PROCESSED"));
}

TEST(MarkSettle, StateNamesAreTheColumnsValues) {
  EXPECT_EQ(MarkStateName(MarkState::kMarked), "MARKED");
  EXPECT_EQ(MarkStateName(MarkState::kMarkedElsewhere), "MARKED_ELSEWHERE");
  EXPECT_EQ(MarkStateName(MarkState::kAbandoned), "ABANDONED");
  EXPECT_EQ(MarkStateName(MarkState::kReconciled), "RECONCILED");
}

}  // namespace
}  // namespace msgx
