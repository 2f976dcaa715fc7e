// `msgx refold [--verify] [--until]` and `msgx inspect flight|ref` against a
// state.dir holding a real log (the corpus) and a live state store folded
// from it.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/log.h"
#include "codecs/sis_decoder.h"
#include "state/log_store.h"
#include "stream/fold/fold.h"
#include "stream/fold/handlers/handlers.h"
#include "stream/fold/log_fold_source.h"
#include "stream/fold/sis_fold_decoder.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT
namespace fs = std::filesystem;

struct RunResult {
  int exit_code = -1;
  std::string out;
};

RunResult RunMsgx(const std::string& state_dir, const std::string& args) {
  const std::string cmd = "MSGX_STATE_DIR='" + state_dir + "' MSGX_LOG_LEVEL=off '" +
                          std::string(MSGX_BINARY) + "' " + args + " 2>/dev/null";
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

class FoldCliTest : public ::testing::Test {
 protected:
  // How the live fold differs from the one `msgx refold` runs (none here).
  virtual void LiveOptions(FoldOptions* /*options*/) {}

  void SetUp() override {
    (void)InitLogging("off");
    ManualClock clock(Local(2021, 1, 23, 1));
    auto log = LogStore::Open(dir_.path() + "/log", &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    std::vector<LogRecordData> records;
    int i = 0;
    for (const char* name : {"SCHD-DNLD-1.xml", "FLOP-STND-1.xml", "FLOP-ACFT-1.xml",
                             "FLOP-DELY-1.xml", "ABNR-ADD-1.xml", "AIRL-DNLD-1.xml"}) {
      std::ifstream in(fs::path(MSGX_CORPUS_DIR) / name, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      ++i;
      records.push_back(
          LogRecordData::Message(i,
                                 std::regex_replace(ss.str(), std::regex("<SEQN>[^<]*</SEQN>"),
                                                    "<SEQN>" + std::to_string(i) + "</SEQN>"),
                                 std::nullopt));
    }
    CaptureProgress progress;
    progress.watermark = i;
    ASSERT_TRUE((*log)->Append(records, progress).ok());

    // The live fold, in batches of 2 (so there are several batch ends).
    const TimeZone tz = TimeZone::Fixed("Asia/Shanghai", 8 * 3600);
    const TimeZoneAirportZone zone(tz);
    const sis::SisDecoder sis_decoder(tz);
    const SisFoldDecoder decoder(sis_decoder);
    LogFoldSource source([&](std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
      return (*log)->Read(from, max, out);
    });
    auto store = StateStore::Open(dir_.path() + "/state", {false, false});
    ASSERT_TRUE(store.ok());
    FoldOptions options;
    options.zone = &zone;
    options.batch_max = 2;
    LiveOptions(&options);
    Fold fold(store->get(), &decoder, &source, options);
    ASSERT_TRUE(fold.Open().ok());
    std::vector<FoldInput> in;
    ASSERT_TRUE(source.ReadBatch(0, 100, &in).ok());
    ASSERT_TRUE(fold.Process(in).ok());
  }

  TempDir dir_;
};

TEST_F(FoldCliTest, RefoldVerifyInspect) {
  RunResult r = RunMsgx(dir_.path(), "refold");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("refolded offsets 0..5 records=6"), std::string::npos) << r.out;

  r = RunMsgx(dir_.path(), "refold --verify");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("identical up to offset 5"), std::string::npos) << r.out;

  r = RunMsgx(dir_.path(), "inspect flight 15 --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"DELY\":[{\"CODE\":\"YY\""), std::string::npos) << r.out;

  // Time travel: before FLOP-DELY-1 (offset 3) the flight had no delays.
  r = RunMsgx(dir_.path(), "inspect flight 15 --at 2 --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.find("DELY"), std::string::npos) << r.out;
  EXPECT_EQ(RunMsgx(dir_.path(), "inspect flight NOPE").exit_code, 1);

  // Reference records: the keys of a type, one record, and time travel
  // (AIRL-DNLD-1 is offset 5: before it there were no AIRL records).
  r = RunMsgx(dir_.path(), "inspect ref AIRL");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const std::string airl = r.out.substr(0, r.out.find('\n'));
  ASSERT_FALSE(airl.empty());
  r = RunMsgx(dir_.path(), "inspect ref AIRL " + airl);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("type: AIRL\nkey: " + airl + "\n"), std::string::npos) << r.out;
  r = RunMsgx(dir_.path(), "inspect ref AIRL " + airl + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("\"type\":\"AIRL\""), std::string::npos) << r.out;
  r = RunMsgx(dir_.path(), "inspect ref AIRL " + airl + " --at 4");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("AIRL " + airl + " not found"), std::string::npos) << r.out;
  r = RunMsgx(dir_.path(), "inspect ref AIRL --at 4");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("no AIRL records"), std::string::npos) << r.out;

  // Corrupt one outcome in the live store: verify finds it.
  {
    auto store = StateStore::Open(dir_.path() + "/state", {false, false});
    ASSERT_TRUE(store.ok());
    auto o = (*store)->GetOutcome(2);
    ASSERT_TRUE(o.ok() && o->has_value());
    BatchWrite w;
    Outcome bad = **o;
    bad.last_error = "tampered";
    w.outcomes[2] = bad;
    w.meta = *(*store)->ReadMeta();
    w.meta.applied_offset = -1;  // leave meta's offset entries alone
    ASSERT_TRUE((*store)->Commit(w).ok());
  }
  r = RunMsgx(dir_.path(), "refold --verify");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("DIVERGENCE: digests agree but state differs at outcomes/"),
            std::string::npos)
      << r.out;

  // A binding tampered as well: the two halves of the state are compared on
  // two threads, and the identity column family comes before the outcomes.
  {
    auto store = StateStore::Open(dir_.path() + "/state", {false, false});
    ASSERT_TRUE(store.ok());
    auto o = (*store)->GetOutcome(2);
    ASSERT_TRUE(o.ok() && o->has_value() && !(*o)->identity_key.empty());
    auto b = (*store)->GetBinding((*o)->identity_key);
    ASSERT_TRUE(b.ok() && b->has_value());
    BatchWrite w;
    IdentityBinding bad = **b;
    bad.bound_micros += 1;
    w.bindings[bad.key] = bad;
    w.meta = *(*store)->ReadMeta();
    w.meta.applied_offset = -1;
    ASSERT_TRUE((*store)->Commit(w).ok());
  }
  r = RunMsgx(dir_.path(), "refold --verify");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("DIVERGENCE: digests agree but state differs at identity/"),
            std::string::npos)
      << r.out;
}

// One event payload changed by hand in the live store (every digest still
// agrees): verify names the batch and the event, and shows both payloads.
TEST_F(FoldCliTest, VerifyComparesEventPayloadsByteForByte) {
  std::string key, range;
  {
    auto store = StateStore::Open(dir_.path() + "/state", {false, false});
    ASSERT_TRUE(store.ok());
    auto ranges = (*store)->PendingRanges();
    ASSERT_TRUE(ranges.ok());
    std::optional<PendingBatch> victim;
    for (const auto& [first, last] : *ranges) {
      auto p = (*store)->PendingCovering(first);
      ASSERT_TRUE(p.ok());
      if (p->has_value() && !(*p)->events.empty()) {
        victim = **p;
        break;
      }
    }
    ASSERT_TRUE(victim.has_value()) << "no pending batch holds an event";
    victim->events.back().payload_json += " ";
    key = victim->events.back().event_key;
    range = "[" + std::to_string(victim->first_offset) + "," + std::to_string(victim->last_offset) +
            "]";
    BatchWrite w;
    w.meta = *(*store)->ReadMeta();
    w.meta.applied_offset = -1;  // leave meta's offset entries alone
    w.pending = *victim;
    ASSERT_TRUE((*store)->Commit(w).ok());
  }
  RunResult r = RunMsgx(dir_.path(), "refold --verify");
  EXPECT_EQ(r.exit_code, 1) << r.out;
  EXPECT_NE(r.out.find("DIVERGENCE: digests agree but a pending batch " + range + ": event " + key +
                       " ("),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("payload differs"), std::string::npos) << r.out;
}

TEST_F(FoldCliTest, VerifyExit3WhenAnOlderFoldVersionDecided) {
  // Rewrite the last batch end as if an older fold version had decided it
  // differently.
  {
    auto store = StateStore::Open(dir_.path() + "/state", {false, false});
    ASSERT_TRUE(store.ok());
    BatchWrite w;
    w.meta = *(*store)->ReadMeta();
    ASSERT_EQ(w.meta.applied_offset, 5);
    w.meta.fold_version = kFoldVersion - 1;
    w.meta.digest = std::string(32, 'x');
    ASSERT_TRUE((*store)->Commit(w).ok());
  }
  RunResult r = RunMsgx(dir_.path(), "refold --verify");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("upgrade diff"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("batch [4,5]"), std::string::npos) << r.out;
  // Only the recorded digest was rewritten: no decision changes.
  EXPECT_NE(r.out.find("changes: 0 message(s), 0 flight(s), 0 reference record(s)\nno outcome, "
                       "flight or reference record changes"),
            std::string::npos)
      << r.out;
  // --until before the rewritten batch: identical.
  r = RunMsgx(dir_.path(), "refold --verify --until 3");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

// A live store folded by an older fold version that decided this log the
// same: no divergence, no upgrade diff.
class FoldCliOlderVersionTest : public FoldCliTest {
 protected:
  void LiveOptions(FoldOptions* options) override { options->fold_version = kFoldVersion - 1; }
};

TEST_F(FoldCliOlderVersionTest, VerifyPassesWhenTheOlderVersionDecidedTheSame) {
  const RunResult r = RunMsgx(dir_.path(), "refold --verify");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("identical up to offset 5"), std::string::npos) << r.out;
}

// The "older" fold version of the upgrade test: a deliberately changed
// router that had no handler for FLOP DELY.
Result<Decision> DecideWithoutDely(const StateView& view, const sis::DecodedMessage& msg,
                                   const DecideContext& ctx) {
  if (msg.meta.type == "FLOP" && msg.meta.styp == "DELY") {
    return Status::Unsupported("no handler for FLOP DELY in this fold version");
  }
  return Decide(view, msg, ctx);
}

// The live store was folded by that older version (recorded as
// kFoldVersion - 1); the current one decides FLOP-DELY-1 (offset 3, mailbox
// id 4, flight 15) differently.
class FoldCliUpgradeTest : public FoldCliTest {
 protected:
  void LiveOptions(FoldOptions* options) override {
    options->fold_version = kFoldVersion - 1;
    options->decide = &DecideWithoutDely;
  }
};

TEST_F(FoldCliUpgradeTest, VerifyWritesWhatTheNewFoldVersionChanges) {
  RunResult r = RunMsgx(dir_.path(), "refold --verify");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("upgrade diff: digest differs in batch [2,3] (decided by fold version " +
                       std::to_string(kFoldVersion - 1) + ", now " + std::to_string(kFoldVersion) +
                       ")\n"),
            std::string::npos)
      << r.out;
  // Per message: the old outcome and the new.
  EXPECT_NE(r.out.find("\nmessage 4 (offset 3): DEAD UNSUPPORTED (no handler for FLOP DELY in "
                       "this fold version) at offset 3 -> SUCCEEDED"),
            std::string::npos)
      << r.out;
  // Per flight: the old fields and the new.
  EXPECT_NE(r.out.find("\nflight 15\n  DELY: (none) -> [{\"CODE\":\"YY\""), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("changes: 1 message(s), 1 flight(s), 0 reference record(s)\n"),
            std::string::npos)
      << r.out;
  // Nothing else changes: the other five messages are not listed.
  EXPECT_EQ(r.out.find("\nmessage 1 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\nmessage 6 "), std::string::npos) << r.out;

  // --until below the live applied offset: only the first changed record.
  r = RunMsgx(dir_.path(), "refold --verify --until 4");
  EXPECT_EQ(r.exit_code, 3) << r.out;
  EXPECT_NE(r.out.find("first record: offset 3 mailbox id 4"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("changes:"), std::string::npos) << r.out;
  // Before the changed record: identical.
  r = RunMsgx(dir_.path(), "refold --verify --until 1");
  EXPECT_EQ(r.exit_code, 0) << r.out;
}

}  // namespace
}  // namespace msgx
