// Seed mode (pipeline.retry-deterministic, docs/fold.md#seed-mode): a
// deterministic failure holds the head, nothing behind it is applied, and once
// an EXHAUST command is in the log the message ends DEAD EXHAUSTED and the rest
// goes on. With the retry policy (stream/fold/head_retry.h) under a manual
// clock: backoff 1, 2, 4, 8, 16 s while the messages behind wait, then
// EXHAUSTED.
#include <gtest/gtest.h>

#include "base/log.h"
#include "stream/fold/fold.h"
#include "stream/fold/head_retry.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

const FixedZone kZone(8 * 3600);
const MicrosSinceEpoch kT0 = Local(2026, 11, 30, 6);

class SeedModeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)InitLogging("off");
    auto s = StateStore::Open(dir_.path() + "/state", {false, false});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    FoldOptions o;
    o.zone = &kZone;
    o.settings.retry_deterministic = true;
    o.batch_max = 2;  // the head falls mid-batch and across batches
    fold_ = std::make_unique<Fold>(store_.get(), &decoder_, &log_, o);
    ASSERT_TRUE(fold_->Open().ok());
    // 1 creates F1, 2 sets a stand, 3 cannot be decoded, 4 and 5 wait behind it.
    log_.AddMessage(
        1, kT0,
        Raw("AODB", "1", "SCHD", "ADD", "F1," + std::to_string(Local(2026, 11, 30, 12)) + ",A320"));
    log_.AddMessage(2, kT0, Raw("AODB", "2", "FLOP", "STND", "F1=S1"));
    log_.AddMessage(3, kT0, Raw("AODB", "3", "FLOP", "STND", "!CODEC"));
    log_.AddMessage(4, kT0, Raw("AODB", "4", "FLOP", "STND", "F1=S4"));
    log_.AddMessage(5, kT0, Raw("AODB", "5", "FLOP", "ACFT", "F1=B738"));
  }

  // Folds from the applied offset, as the service's loop does.
  void FoldRest() {
    std::vector<FoldInput> rest;
    for (const auto& r : log_.records) {
      if (r.offset > fold_->applied_offset()) rest.push_back(r);
    }
    Status s = fold_->Process(rest);
    ASSERT_TRUE(s.ok()) << s.ToString();
  }

  std::optional<Outcome> OutcomeOf(std::int64_t id) {
    auto o = store_->GetOutcome(id);
    EXPECT_TRUE(o.ok());
    return o.ok() ? *o : std::nullopt;
  }

  TempDir dir_;
  std::unique_ptr<StateStore> store_;
  FakeDecoder decoder_;
  VectorLog log_;
  std::unique_ptr<Fold> fold_;
};

TEST_F(SeedModeTest, AFailedHeadBlocksWhatIsBehindItThenExhausts) {
  PipelineConfig p;  // backoff 1,2,4,8,16 s; head-deadline 10m
  p.max_attempts = 6;
  ManualClock clock(kT0);
  HeadRetry retry(p, &clock);

  std::vector<std::int64_t> waits;
  for (;;) {
    FoldRest();
    ASSERT_TRUE(fold_->held().has_value());
    const HeldHead head = *fold_->held();
    EXPECT_EQ(head.mailbox_id, 3);
    EXPECT_EQ(head.error_class, "CODEC_ERROR");
    // Everything before the head is committed; nothing at or after it.
    EXPECT_EQ(fold_->applied_offset(), 1);
    EXPECT_EQ((*store_->GetFlight("F1"))->data.Get("STND"), Value::Text("S1"));
    EXPECT_FALSE(OutcomeOf(3).has_value());
    EXPECT_FALSE(OutcomeOf(4).has_value());
    HeadVerdict v = retry.Failed(head.offset);
    if (v.kind == HeadVerdict::Kind::kExhaust) {
      log_.exhausted[head.offset] = v.reason;  // the EXHAUST command's index
      const FoldCommand exhaust(ExhaustCommand{head.offset, v.attempts, v.reason});
      log_.AddCommand(clock.NowMicros(), exhaust);
      break;
    }
    waits.push_back((v.retry_at - clock.NowMicros()) / 1'000'000);
    clock.Set(v.retry_at);
  }
  EXPECT_EQ(waits, (std::vector<std::int64_t>{1, 2, 4, 8, 16}));

  FoldRest();
  EXPECT_FALSE(fold_->held().has_value());
  auto dead = OutcomeOf(3);
  ASSERT_TRUE(dead.has_value());
  EXPECT_EQ(dead->state, OutcomeState::kDead);
  EXPECT_EQ(dead->error_class, "EXHAUSTED");
  EXPECT_EQ(dead->last_error.rfind("exhausted:max-attempts 6: CODEC_ERROR: too big", 0), 0u)
      << dead->last_error;
  EXPECT_EQ(OutcomeOf(4)->state, OutcomeState::kSucceeded);
  EXPECT_EQ(OutcomeOf(5)->state, OutcomeState::kSucceeded);
  auto f = store_->GetFlight("F1");
  EXPECT_EQ((*f)->data.Get("STND"), Value::Text("S4"));
  EXPECT_EQ(fold_->applied_offset(), 5);  // the EXHAUST command included
}

TEST_F(SeedModeTest, AReFoldWithTheExhaustCommandNeverHoldsAndMatches) {
  log_.exhausted[2] = "head-deadline 600s";
  const FoldCommand exhaust(ExhaustCommand{2, 3, "head-deadline 600s"});
  log_.AddCommand(kT0, exhaust);
  FoldRest();
  EXPECT_FALSE(fold_->held().has_value());
  EXPECT_EQ(OutcomeOf(3)->error_class, "EXHAUSTED");
  const std::string live = fold_->digest();

  TempDir other;
  auto s = StateStore::Open(other.path() + "/state", {false, false});
  ASSERT_TRUE(s.ok());
  FoldOptions o;
  o.zone = &kZone;
  o.settings.retry_deterministic = true;
  o.batch_max = 1000;
  Fold refold(s->get(), &decoder_, &log_, o);
  ASSERT_TRUE(refold.Open().ok());
  ASSERT_TRUE(refold.Process(log_.records).ok());
  EXPECT_FALSE(refold.held().has_value());
  EXPECT_EQ(refold.digest(), live);
}

TEST_F(SeedModeTest, DefaultModeGoesStraightToDead) {
  TempDir other;
  auto s = StateStore::Open(other.path() + "/state", {false, false});
  ASSERT_TRUE(s.ok());
  FoldOptions o;
  o.zone = &kZone;
  Fold plain(s->get(), &decoder_, &log_, o);
  ASSERT_TRUE(plain.Open().ok());
  ASSERT_TRUE(plain.Process(log_.records).ok());
  EXPECT_FALSE(plain.held().has_value());
  EXPECT_EQ((**(*s)->GetOutcome(3)).error_class, "CODEC_ERROR");
  EXPECT_EQ((**(*s)->GetOutcome(5)).state, OutcomeState::kSucceeded);
}

}  // namespace
}  // namespace msgx
