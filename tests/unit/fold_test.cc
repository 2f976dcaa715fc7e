// The fold driver: outcomes, identity, ignore rules, replay, quarantine,
// commands, and batching (docs/fold.md#outcome-rules, docs/fold.md#identity,
// docs/fold.md#commands).
#include "stream/fold/fold.h"

#include <gtest/gtest.h>

#include "base/log.h"
#include "state/digest.h"
#include "stream/apply/rebuild_check.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

const FixedZone kZone(8 * 3600);
const MicrosSinceEpoch kT0 = Local(2026, 11, 30, 6);

class FoldTest : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)InitLogging("off");
    auto s = StateStore::Open(dir_.path() + "/state", {false, false});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(*s);
    options_.zone = &kZone;
  }

  std::unique_ptr<Fold> MakeFold() {
    auto f = std::make_unique<Fold>(store_.get(), &decoder_, &log_, options_);
    EXPECT_TRUE(f->Open().ok());
    return f;
  }

  // Folds every record of the log not yet folded.
  Fold& FoldAll() {
    if (!fold_) fold_ = MakeFold();
    Status s = fold_->Process(log_.records);
    EXPECT_TRUE(s.ok()) << s.ToString();
    return *fold_;
  }

  Outcome OutcomeOf(std::int64_t id) {
    auto o = store_->GetOutcome(id);
    EXPECT_TRUE(o.ok() && o->has_value()) << id;
    return o.ok() && o->has_value() ? **o : Outcome{};
  }

  // A schedule creating flight `flid` (SODT today 12:00).
  std::string Schedule(const std::string& seqn, const std::string& flid) {
    return Raw("AODB", seqn, "SCHD", "ADD",
               flid + "," + std::to_string(Local(2026, 11, 30, 12)) + ",A320");
  }

  TempDir dir_;
  std::unique_ptr<StateStore> store_;
  FakeDecoder decoder_;
  VectorLog log_;
  FoldOptions options_;
  std::unique_ptr<Fold> fold_;
};

TEST_F(FoldTest, SucceededAndUnknownFlight) {
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "2", "FLOP", "STND", "F1=S1"));
  log_.AddMessage(3, kT0, Raw("AODB", "3", "FLOP", "STND", "NOPE=S1"));
  FoldAll();
  EXPECT_EQ(OutcomeOf(1).state, OutcomeState::kSucceeded);
  EXPECT_EQ(OutcomeOf(2).state, OutcomeState::kSucceeded);
  EXPECT_EQ(OutcomeOf(2).identity_key, "AODB|FLOP|STND|2");
  EXPECT_EQ(OutcomeOf(3).state, OutcomeState::kSkipped);
  EXPECT_EQ(OutcomeOf(3).last_error, "unknown-flight:NOPE");
  // The unknown flight's record is counted (it is logged at debug only).
  EXPECT_EQ(fold_->counters().skipped_records, 1);
  EXPECT_EQ(fold_->counters().rejected_records, 0);
  auto f = store_->GetFlight("F1");
  ASSERT_TRUE(f.ok() && f->has_value());
  EXPECT_EQ((*f)->data.Get("STND"), Value::Text("S1"));
  EXPECT_EQ((*f)->version, 1);
  EXPECT_EQ(store_->ReadMeta()->applied_offset, 2);
}

TEST_F(FoldTest, DuplicateSkippedAlsoWithDifferentBody) {
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "7", "FLOP", "STND", "F1=S1"));
  log_.AddMessage(3, kT0, Raw("AODB", "7", "FLOP", "STND", "F1=S1"));
  log_.AddMessage(4, kT0, Raw("AODB", "7", "FLOP", "STND", "F1=S2"));
  Fold& f = FoldAll();
  EXPECT_EQ(OutcomeOf(3).state, OutcomeState::kSkipped);
  EXPECT_EQ(OutcomeOf(3).last_error, "duplicate-of:2");
  EXPECT_EQ(OutcomeOf(4).last_error, "duplicate-of:2");
  EXPECT_EQ(f.counters().duplicates, 2);
  EXPECT_EQ(f.counters().duplicate_body_differs, 1);
  EXPECT_EQ((*store_->GetFlight("F1"))->data.Get("STND"), Value::Text("S1"));  // never applied
}

TEST_F(FoldTest, MalformedCopyDoesNotBindIdentity) {
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "7", "FLOP", "STND", "!MALFORMED"));
  log_.AddMessage(3, kT0, Raw("AODB", "7", "FLOP", "STND", "F1=S1"));
  FoldAll();
  EXPECT_EQ(OutcomeOf(2).state, OutcomeState::kDead);
  EXPECT_EQ(OutcomeOf(2).error_class, "MALFORMED");
  EXPECT_TRUE(OutcomeOf(2).identity_key.empty());
  EXPECT_EQ(OutcomeOf(3).state, OutcomeState::kSucceeded);
}

TEST_F(FoldTest, SeqnWrapStartsNewEpoch) {
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "5", "FLOP", "STND", "F1=S1"));
  log_.AddMessage(3, kT0, Raw("AODB", "999990", "FLOP", "STND", "F1=S2"));
  log_.AddMessage(4, kT0, Raw("AODB", "5", "FLOP", "STND", "F1=S3"));  // after the wrap
  log_.AddMessage(5, kT0, Raw("AODB", "5", "FLOP", "STND", "F1=S3"));  // its duplicate
  FoldAll();
  EXPECT_EQ(OutcomeOf(4).state, OutcomeState::kSucceeded);
  EXPECT_EQ(OutcomeOf(4).identity_key, "AODB|FLOP|STND|5#e1");
  EXPECT_EQ(OutcomeOf(5).last_error, "duplicate-of:4");
  EXPECT_EQ((*store_->GetFlight("F1"))->data.Get("STND"), Value::Text("S3"));
}

TEST_F(FoldTest, IdentityExpiryByCommand) {
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "7", "FLOP", "STND", "F1=S1"));
  log_.AddCommand(kT0 + 1, IdentityExpiryCommand{kT0 + 1});
  log_.AddMessage(3, kT0 + 2, Raw("AODB", "7", "FLOP", "STND", "F1=S2"));
  Fold& f = FoldAll();
  EXPECT_EQ(f.counters().identities_expired, 2);
  EXPECT_EQ(OutcomeOf(3).state, OutcomeState::kSucceeded);
}

TEST_F(FoldTest, IgnoreRuleWinsOverUnsupportedAndBrokenBody) {
  options_.settings.ignore_rules = {"rsta-*", "XXXX-YY"};
  decoder_.unsupported = {"YY"};
  log_.AddMessage(1, kT0, Raw("AODB", "1", "XXXX", "YY", "whatever"));
  log_.AddMessage(2, kT0, Raw("AODB", "2", "RSTA", "ZZ", "!MALFORMED"));
  log_.AddMessage(3, kT0, Raw("AODB", "3", "XXXX", "ZZ", "!MALFORMED"));
  Fold& f = FoldAll();
  EXPECT_EQ(OutcomeOf(1).state, OutcomeState::kSkipped);
  EXPECT_EQ(OutcomeOf(1).last_error, "ignored:XXXX-YY");
  EXPECT_EQ(OutcomeOf(2).last_error, "ignored:rsta-*");
  EXPECT_EQ(OutcomeOf(3).state, OutcomeState::kDead);
  EXPECT_EQ(f.counters().ignored, 2);
}

TEST_F(FoldTest, DeadClassesAndReplay) {
  decoder_.unsupported = {"NEWS"};
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "2", "FLOP", "STND", "!MALFORMED"));
  log_.AddMessage(3, kT0, Raw("AODB", "3", "FLOP", "NEWS", "F1=S7"));
  log_.AddMessage(4, kT0, Raw("AODB", "4", "FLOP", "STND", "!CODEC"));
  log_.AddMessage(5, kT0, "garbage");
  FoldAll();
  EXPECT_EQ(OutcomeOf(2).error_class, "MALFORMED");
  EXPECT_EQ(OutcomeOf(3).error_class, "UNSUPPORTED");
  EXPECT_EQ(OutcomeOf(4).error_class, "CODEC_ERROR");
  EXPECT_EQ(OutcomeOf(5).error_class, "MALFORMED");
  const Outcome malformed = OutcomeOf(2);

  decoder_.unsupported.clear();  // a new fold version learned NEWS
  const MicrosSinceEpoch t_cmd = kT0 + 3'600'000'000LL;
  log_.AddCommand(t_cmd, ReplayCommand{{2, 3, 99}});
  Fold& f = FoldAll();
  EXPECT_EQ(OutcomeOf(2), malformed);  // MALFORMED: silently refused
  const Outcome replayed = OutcomeOf(3);
  EXPECT_EQ(replayed.state, OutcomeState::kSucceeded);
  EXPECT_EQ(replayed.log_offset, 5);      // decided at the command's offset
  EXPECT_EQ(replayed.message_offset, 2);  // bytes from the original record
  EXPECT_EQ(replayed.decided_micros, t_cmd);
  EXPECT_EQ(replayed.attempts, 1);
  EXPECT_EQ(replayed.prev_error, "UNSUPPORTED: no handler NEWS");
  EXPECT_EQ((*store_->GetFlight("F1"))->data.Get("NEWS"), Value::Text("S7"));
  EXPECT_EQ((*store_->GetFlight("F1"))->version, 5);
  EXPECT_EQ(f.counters().replays_refused, 2);
}

// A replay keeps the identity its message was first decided with and never
// moves the SEQN tracker (docs/fold.md#identity): replayed after the
// sender's SEQN wrapped, it binds its epoch-0 key, and the genuine message
// of the new epoch with the same SEQN is applied, not taken for its copy.
TEST_F(FoldTest, ReplayAcrossASeqnWrapKeepsItsFirstIdentity) {
  decoder_.unsupported = {"NEWS"};
  log_.AddMessage(1, kT0, Schedule("999980", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "999990", "FLOP", "NEWS", "F1=S7"));  // DEAD
  log_.AddMessage(3, kT0, Raw("AODB", "5", "FLOP", "STND", "F1=S1"));       // the wrap
  log_.AddMessage(4, kT0, Raw("AODB", "400000", "FLOP", "STND", "F1=S2"));
  log_.AddMessage(5, kT0, Raw("AODB", "800000", "FLOP", "STND", "F1=S3"));
  FoldAll();
  EXPECT_EQ(OutcomeOf(2).error_class, "UNSUPPORTED");
  EXPECT_EQ(OutcomeOf(2).identity_key, "AODB|FLOP|NEWS|999990");  // kept, not bound
  EXPECT_EQ(OutcomeOf(5).identity_key, "AODB|FLOP|STND|800000#e1");

  decoder_.unsupported.clear();
  log_.AddCommand(kT0 + 1, ReplayCommand{{2}});
  FoldAll();
  EXPECT_EQ(OutcomeOf(2).state, OutcomeState::kSucceeded);
  EXPECT_EQ(OutcomeOf(2).identity_key, "AODB|FLOP|NEWS|999990");
  EXPECT_EQ(*store_->GetSender("AODB"), (SenderSeqn{800000, 1}));  // not moved

  log_.AddMessage(6, kT0 + 2, Raw("AODB", "999990", "FLOP", "NEWS", "F1=S8"));  // epoch 1
  FoldAll();
  EXPECT_EQ(OutcomeOf(6).state, OutcomeState::kSucceeded) << OutcomeOf(6).last_error;
  EXPECT_EQ(OutcomeOf(6).identity_key, "AODB|FLOP|NEWS|999990#e1");
  EXPECT_EQ((*store_->GetFlight("F1"))->data.Get("NEWS"), Value::Text("S8"));
}

// A message whose first decision kept no identity (quarantined before it
// was decoded) takes its epoch from the tracker when replayed, and still
// leaves the tracker where it is: a later SEQN is judged against the
// sender's genuine messages only.
TEST_F(FoldTest, ReplayWithoutAFirstIdentityDoesNotMoveTheTracker) {
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "900000", "FLOP", "STND", "F1=S1"));
  log_.AddMessage(3, kT0, Raw("AODB", "300000", "FLOP", "STND", "F1=S2"));
  log_.AddCommand(kT0, QuarantineCommand{1, "crashed twice"});
  log_.quarantine[1] = "crashed twice";
  log_.AddCommand(kT0 + 1, ReplayCommand{{2}});
  log_.AddMessage(4, kT0 + 2, Raw("AODB", "300001", "FLOP", "STND", "F1=S3"));
  FoldAll();
  EXPECT_EQ(OutcomeOf(2).state, OutcomeState::kSucceeded);
  EXPECT_EQ(OutcomeOf(2).prev_error, "QUARANTINED: quarantined:crashed twice");
  EXPECT_EQ(OutcomeOf(2).identity_key, "AODB|FLOP|STND|900000");
  EXPECT_EQ(OutcomeOf(4).identity_key, "AODB|FLOP|STND|300001");  // no spurious wrap
  EXPECT_EQ(*store_->GetSender("AODB"), (SenderSeqn{300001, 0}));
}

TEST_F(FoldTest, QuarantinedRecordIsDeadWithReason) {
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "2", "FLOP", "STND", "F1=S1"));
  log_.AddCommand(kT0, QuarantineCommand{1, "crashed twice"});
  log_.quarantine[1] = "crashed twice";
  FoldAll();
  EXPECT_EQ(OutcomeOf(2).state, OutcomeState::kDead);
  EXPECT_EQ(OutcomeOf(2).error_class, "QUARANTINED");
  EXPECT_EQ(OutcomeOf(2).last_error, "quarantined:crashed twice");
  EXPECT_FALSE((*store_->GetFlight("F1"))->data.fields.count("STND"));
  // Replayed by its id, it is decided from its bytes like any other.
  log_.AddCommand(kT0, ReplayCommand{{2}});
  FoldAll();
  EXPECT_EQ(OutcomeOf(2).state, OutcomeState::kSucceeded);
  EXPECT_EQ(OutcomeOf(2).prev_error, "QUARANTINED: quarantined:crashed twice");
  EXPECT_EQ((*store_->GetFlight("F1"))->data.Get("STND"), Value::Text("S1"));
}

// Crash poison quarantined the second message of a replay, (replay offset,
// 1) (docs/crash-safety.md#crash-poison): that message alone is not
// decided and ends DEAD QUARANTINED with the error it had kept; the
// replay's other messages are decided as usual, and a re-fold of the same
// log decides the same.
TEST_F(FoldTest, AQuarantinedMessageOfAReplayIsNotDecidedButTheOthersAre) {
  decoder_.unsupported = {"NEWS"};
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "2", "FLOP", "NEWS", "F1=S7"));
  log_.AddMessage(3, kT0, Raw("AODB", "3", "FLOP", "NEWS", "F1=S8"));
  log_.AddMessage(4, kT0, Raw("AODB", "4", "FLOP", "NEWS", "F1=S9"));
  // From offset 4 on, FLOP-NEWS is ignored: a replay is SKIPPED, not DEAD.
  DecisionSettings ignore_news = options_.settings;
  ignore_news.ignore_rules.push_back("FLOP-NEWS");
  log_.AddCommand(kT0 + 1, SettingsCommand{ignore_news, false});
  const MicrosSinceEpoch t_cmd = kT0 + 2;
  log_.AddCommand(t_cmd, ReplayCommand{{2, 3, 4}});  // offset 5
  const std::string reason = "crashed the processor 2 times (signal 6)";
  log_.AddCommand(t_cmd + 1, QuarantineCommand{5, reason, 1});
  log_.quarantine_sub[{5, 1}] = reason;
  FoldAll();

  for (std::int64_t id : {2, 4}) {
    const Outcome o = OutcomeOf(id);
    EXPECT_EQ(o.state, OutcomeState::kSkipped) << id;
    EXPECT_EQ(o.last_error, "ignored:FLOP-NEWS") << id;
    EXPECT_EQ(o.prev_error, "UNSUPPORTED: no handler NEWS") << id;
    EXPECT_EQ(o.log_offset, 5) << id;
  }
  const Outcome q = OutcomeOf(3);
  EXPECT_EQ(q.state, OutcomeState::kDead);
  EXPECT_EQ(q.error_class, "QUARANTINED");
  EXPECT_EQ(q.last_error, "quarantined:" + reason);
  EXPECT_EQ(q.prev_error, "UNSUPPORTED: no handler NEWS");
  EXPECT_EQ(q.log_offset, 5);      // at the replay's offset
  EXPECT_EQ(q.message_offset, 2);  // its bytes stay where they were
  EXPECT_EQ(q.decided_micros, t_cmd);
  EXPECT_EQ(q.identity_key, "AODB|FLOP|NEWS|3");  // its first decision's
  EXPECT_EQ(fold_->counters().quarantined, 1);
  EXPECT_EQ(store_->ReadMeta()->applied_offset, 6);

  // A re-fold of the same log decides the same; without the quarantine it
  // would not (the digest covers it).
  auto refold = [&](const VectorLog& log) {
    TempDir dir;
    auto store = StateStore::Open(dir.path() + "/state", {false, false});
    EXPECT_TRUE(store.ok());
    Fold f(store->get(), &decoder_, &log, options_);
    EXPECT_TRUE(f.Open().ok());
    Status st = f.Process(log.records);
    EXPECT_TRUE(st.ok()) << st.ToString();
    auto o = (*store)->GetOutcome(3);
    EXPECT_TRUE(o.ok() && o->has_value());
    return std::make_pair(f.digest(), o.ok() && o->has_value() ? **o : Outcome{});
  };
  const auto [digest, outcome] = refold(log_);
  EXPECT_EQ(digest, fold_->digest());
  EXPECT_EQ(outcome, q);
  VectorLog unquarantined = log_;
  unquarantined.quarantine_sub.clear();
  EXPECT_NE(refold(unquarantined).first, fold_->digest());

  // Replayed again by its id, it is decided from its bytes.
  log_.AddCommand(t_cmd + 2, ReplayCommand{{3}});
  FoldAll();
  EXPECT_EQ(OutcomeOf(3).state, OutcomeState::kSkipped);
  EXPECT_EQ(OutcomeOf(3).prev_error, "QUARANTINED: quarantined:" + reason);
}

// A quarantine of the whole replay command (sub -1, as before subs
// existed) still decides none of its messages.
TEST_F(FoldTest, AQuarantinedReplayCommandDecidesNoneOfItsMessages) {
  decoder_.unsupported = {"NEWS"};
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "2", "FLOP", "NEWS", "F1=S7"));
  log_.AddMessage(3, kT0, Raw("AODB", "3", "FLOP", "NEWS", "F1=S8"));
  FoldAll();
  const Outcome two = OutcomeOf(2);
  const Outcome three = OutcomeOf(3);
  decoder_.unsupported.clear();
  log_.AddCommand(kT0 + 1, ReplayCommand{{2, 3}});  // offset 3
  log_.AddCommand(kT0 + 2, QuarantineCommand{3, "crashed twice"});
  log_.quarantine[3] = "crashed twice";
  Fold& f = FoldAll();
  EXPECT_EQ(OutcomeOf(2), two);
  EXPECT_EQ(OutcomeOf(3), three);
  EXPECT_EQ(f.counters().quarantined, 1);
  EXPECT_EQ(f.counters().replays, 0);
}

TEST_F(FoldTest, HistorySweepRemovesOldFlights) {
  log_.AddMessage(1, kT0,
                  Raw("AODB", "1", "SCHD", "ADD",
                      "OLD," + std::to_string(Local(2026, 11, 30, 7)) + ",A320;NEW," +
                          std::to_string(Local(2026, 12, 3, 7)) + ",A320"));
  log_.AddCommand(Local(2026, 12, 3, 3, 30), HistorySweepCommand{});  // keep 2 days: cutoff 1 Dec
  Fold& f = FoldAll();
  EXPECT_FALSE(store_->GetFlight("OLD")->has_value());
  EXPECT_TRUE(store_->GetFlight("NEW")->has_value());
  EXPECT_EQ(f.counters().flights_swept, 1);
}

TEST_F(FoldTest, RestartContinuesFromAppliedOffset) {
  log_.AddMessage(1, kT0, Schedule("1", "F1"));
  log_.AddMessage(2, kT0, Raw("AODB", "2", "FLOP", "STND", "F1=S1"));
  FoldAll();
  const std::string d1 = fold_->digest();
  log_.AddMessage(3, kT0, Raw("AODB", "3", "FLOP", "STND", "F1=S2"));
  fold_ = MakeFold();  // a restart
  EXPECT_EQ(fold_->applied_offset(), 1);
  EXPECT_EQ(fold_->digest(), d1);
  FoldAll();
  EXPECT_EQ(fold_->applied_offset(), 2);
  EXPECT_EQ((*store_->GetFlight("F1"))->data.Get("STND"), Value::Text("S2"));
}

TEST_F(FoldTest, GapIsAnError) {
  auto f = MakeFold();
  std::vector<FoldInput> in(1);
  in[0].offset = 5;
  in[0].raw = "x";
  EXPECT_EQ(f->Process(in).error_class(), ErrorClass::kInternal);
}

// RebuildCheck::Verify (stream/apply/rebuild_check.h) over a real fold's
// batch ends: a match counts, an older fold version's difference only
// warns and ends the comparison (the digest is chained, so every later end
// differs too), and a difference within this version is a bug.
TEST_F(FoldTest, ARebuildStopsComparingAfterAnOlderVersionDiffers) {
  options_.batch_max = 2;
  for (int i = 1; i <= 6; ++i) {
    log_.AddMessage(i, kT0, Raw("AODB", std::to_string(i), "FLOP", "STND", "NOPE=S1"));
  }
  FoldAll();
  auto ends = store_->BatchEnds();
  ASSERT_TRUE(ends.ok());
  ASSERT_EQ(ends->size(), 3u);
  auto pg_end = [&](std::size_t i, std::int64_t version, bool same) {
    const auto& e = (*ends)[i];
    return PgBatchEnd{e.end_offset - 1, e.end_offset, version,
                      same ? ToHex(e.digest) : std::string(64, '0')};
  };
  RebuildCheck upgraded({pg_end(0, kFoldVersion, true), pg_end(1, kFoldVersion - 1, false),
                         pg_end(2, kFoldVersion, false)});
  Status s = upgraded.Verify(*store_, (*ends)[2].end_offset);
  EXPECT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(upgraded.verified(), 1);
  EXPECT_EQ(upgraded.diverged_at(), (*ends)[1].end_offset);
  EXPECT_FALSE(upgraded.pending());

  RebuildCheck bug({pg_end(0, kFoldVersion, true), pg_end(1, kFoldVersion, false)});
  EXPECT_EQ(bug.Verify(*store_, (*ends)[2].end_offset).error_class(), ErrorClass::kInternal);
}

}  // namespace
}  // namespace msgx
