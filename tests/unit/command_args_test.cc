#include <gtest/gtest.h>

#include "stream/capture/command_intake.h"

namespace msgx {
namespace {

TEST(CommandArgsTest, ParsesEveryKind) {
  auto r = ParseCommandArgs("REPLAY_MSG", R"({"mailbox_ids": [3, 1]})");
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(std::get<ReplayArgs>(*r).mailbox_ids, (std::vector<std::int64_t>{3, 1}));

  auto h = ParseCommandArgs("HISTORY_SWEEP", R"({"cutoff_micros": 5})");
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(std::get<HistorySweepArgs>(*h).cutoff, 5);

  auto i = ParseCommandArgs("IDENTITY_EXPIRY", R"({"before_micros": 6})");
  ASSERT_TRUE(i.ok());
  EXPECT_EQ(std::get<IdentityExpiryArgs>(*i).before, 6);
}

TEST(CommandArgsTest, RefusesWhatItCannotAppend) {
  for (const auto& [kind, args] : std::vector<std::pair<std::string, std::string>>{
           {"REPLAY", "{}"},
           {"REPLAY", R"({"mailbox_ids": []})"},
           {"REPLAY", R"({"mailbox_ids": ["7"]})"},
           {"REPLAY", R"({"mailbox_ids": [0]})"},
           {"HISTORY_SWEEP", R"({"cutoff_micros": "soon"})"},
           {"IDENTITY_EXPIRY", "not json"},
           {"IDENTITY_EXPIRY", "[1]"},
           {"FLUSH_EVERYTHING", "{}"},
       }) {
    auto r = ParseCommandArgs(kind, args);
    EXPECT_FALSE(r.ok()) << kind << " " << args;
    if (!r.ok()) {
      EXPECT_EQ(r.status().error_class(), ErrorClass::kMalformed);
    }
  }
}

// Quarantine comes only from crash poison at start-up: an operator's
// QUARANTINE is refused however well-formed its args are.
TEST(CommandArgsTest, RefusesQuarantine) {
  for (const std::string args :
       {R"({"offset": 12, "reason": "crashed twice"})", R"({"offset": 1})", "not json"}) {
    auto r = ParseCommandArgs("QUARANTINE", args);
    ASSERT_FALSE(r.ok()) << args;
    EXPECT_EQ(r.status().error_class(), ErrorClass::kUnsupported);
    EXPECT_NE(r.status().message().find("crash-poison"), std::string::npos);
  }
}

}  // namespace
}  // namespace msgx
