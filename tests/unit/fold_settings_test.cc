// Decision settings as log records (docs/fold.md#settings-in-the-log): the
// SETTINGS record round-trips, the start-up step appends one only on a
// change, and the fold decides every record with the settings in force at
// its offset, whatever the fallback (today's configuration) says. A real
// log store, the real decoder and corpus messages; no services.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "base/log.h"
#include "base/subprocess.h"
#include "state/log_record.h"
#include "state/log_store.h"
#include "stream/fold/fold.h"
#include "stream/fold/log_fold_source.h"
#include "stream/fold/settings_record.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT
namespace fs = std::filesystem;

std::string Corpus(const std::string& name, int seqn) {
  std::ifstream in(fs::path(MSGX_CORPUS_DIR) / name, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return std::regex_replace(ss.str(), std::regex("<SEQN>[^<]*</SEQN>"),
                            "<SEQN>" + std::to_string(seqn) + "</SEQN>");
}

DecisionSettings Defaults() {
  auto s = DecisionSettings::FromConfig(Config{});
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? *s : DecisionSettings{};
}

class FoldSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    (void)InitLogging("off");
    auto log = LogStore::Open(dir_.path() + "/log", &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
  }

  void AddMessage(std::string raw) {
    LogRecordData r = LogRecordData::Message(++mailbox_id_, std::move(raw), std::nullopt);
    CaptureProgress p;
    p.watermark = mailbox_id_;
    ASSERT_TRUE(log_->Append({&r, 1}, p).ok());
    clock_.Advance(std::chrono::seconds(1));
  }
  void AddSettings(const DecisionSettings& s, bool from_start) {
    SettingsArgs a;
    a.settings = s;
    a.in_force_from_start = from_start;
    LogRecordData r = LogRecordData::Command(CommandData{a, "test", 0, 0});
    ASSERT_TRUE(log_->AppendCommands({&r, 1}).ok());
    clock_.Advance(std::chrono::seconds(1));
  }

  struct Folded {
    std::string digest;
    std::map<std::int64_t, Outcome> outcomes;
    std::vector<EventRow> events;    // of every pending batch, in log order
    std::vector<FlightRow> flights;  // the mirror's rows, likewise
    std::optional<HeldHead> held;
    std::int64_t settings_since = -2;
  };
  // Folds the whole log into a fresh store, with `fallback` as "today's
  // configuration".
  Folded FoldAll(const DecisionSettings& fallback) {
    Folded out;
    LogFoldSource source([&](std::uint64_t from, std::size_t max, std::vector<LogEntry>* e) {
      return log_->Read(from, max, e);
    });
    EXPECT_TRUE(source.BuildQuarantineIndex().ok());
    const std::string dir = dir_.path() + "/state-" + std::to_string(++folds_);
    auto store = StateStore::Open(dir, {false, false});
    EXPECT_TRUE(store.ok());
    if (!store.ok()) return out;
    Config c;
    c.pipeline.batch_max = 2;
    Fold fold(store->get(), nullptr, &source, FoldOptions::FromConfig(c, fallback));
    Status opened = fold.Open();
    EXPECT_TRUE(opened.ok()) << opened.ToString();
    if (!opened.ok()) return out;
    std::vector<FoldInput> in;
    EXPECT_TRUE(source.ReadBatch(0, 1000, &in).ok());
    Status s = fold.Process(in);
    EXPECT_TRUE(s.ok()) << s.ToString();
    out.digest = fold.digest();
    out.held = fold.held();
    out.settings_since = fold.settings_since();
    for (std::int64_t id = 1; id <= mailbox_id_; ++id) {
      auto o = (*store)->GetOutcome(id);
      if (o.ok() && o->has_value()) out.outcomes[id] = **o;
    }
    auto ranges = (*store)->PendingRanges();
    EXPECT_TRUE(ranges.ok());
    if (!ranges.ok()) return out;
    for (const auto& range : *ranges) {
      auto p = (*store)->PendingCovering(range.first);
      EXPECT_TRUE(p.ok() && p->has_value());
      if (!p.ok() || !p->has_value()) continue;
      for (EventRow& e : (*p)->events) out.events.push_back(std::move(e));
      for (FlightRow& f : (*p)->flights) out.flights.push_back(std::move(f));
    }
    return out;
  }

  TempDir dir_;
  ManualClock clock_{Local(2026, 7, 1, 10)};
  std::unique_ptr<LogStore> log_;
  std::int64_t mailbox_id_ = 0;
  int folds_ = 0;
};

TEST_F(FoldSettingsTest, ASettingsRecordRoundTripsAndTheLogKnowsTheLastOne) {
  EXPECT_FALSE(log_->last_settings_offset());
  DecisionSettings s = Defaults();
  s.ignore_rules = {"LDM-*"};
  s.retry_deterministic = true;
  s.backoff = {Millis{5}, Millis{7}};
  AddMessage(Corpus("FLOP-ACFT-1.xml", 1));
  AddSettings(s, true);
  EXPECT_EQ(log_->last_settings_offset(), std::optional<std::uint64_t>(1));
  std::vector<LogEntry> e;
  ASSERT_TRUE(log_->Read(1, 1, &e).ok());
  auto data = ToLogRecordData(e.at(0).bytes);
  ASSERT_TRUE(data.ok());
  const auto& args = std::get<SettingsArgs>(data->command->args);
  EXPECT_EQ(args.settings, s);
  EXPECT_FALSE(args.settings.zone_tzif.empty());
  EXPECT_TRUE(args.in_force_from_start);

  log_.reset();  // the index survives a reopen
  auto reopened = LogStore::Open(dir_.path() + "/log", &clock_);
  ASSERT_TRUE(reopened.ok());
  EXPECT_EQ((*reopened)->last_settings_offset(), std::optional<std::uint64_t>(1));
}

TEST_F(FoldSettingsTest, StartUpAppendsSettingsOnlyWhenTheyChange) {
  const DecisionSettings a = Defaults();
  auto first = RecordSettings(a, log_.get());
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE(first->appended);
  EXPECT_EQ(first->offset, 0u);
  auto same = RecordSettings(a, log_.get());
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->appended);
  EXPECT_EQ(same->offset, 0u);
  EXPECT_EQ(log_->next_offset(), 1u);

  DecisionSettings b = a;
  b.ignore_rules = {"LDM-*", "RSTA-*", "EROR-*"};
  EXPECT_EQ(DescribeSettingsChange(a, b),
            "ignore.rules: [LDM-*,REGN-*,RSTA-*,EROR-*] -> [LDM-*,RSTA-*,EROR-*]");
  auto changed = RecordSettings(b, log_.get());
  ASSERT_TRUE(changed.ok());
  EXPECT_TRUE(changed->appended);
  EXPECT_EQ(changed->offset, 1u);
  std::vector<LogEntry> e;
  ASSERT_TRUE(log_->Read(1, 1, &e).ok());
  auto data = ToLogRecordData(e.at(0).bytes);
  ASSERT_TRUE(data.ok());
  EXPECT_FALSE(std::get<SettingsArgs>(data->command->args).in_force_from_start);
}

TEST_F(FoldSettingsTest, EachRecordIsDecidedWithTheSettingsInForceAtItsOffset) {
  DecisionSettings before = Defaults();  // REGN-* ignored
  DecisionSettings after = before;
  after.ignore_rules = {"LDM-*", "RSTA-*", "EROR-*"};
  AddSettings(before, true);
  AddMessage(Corpus("REGN-ADD-1.xml", 1));
  AddSettings(after, false);
  AddMessage(Corpus("REGN-ADD-1.xml", 2));

  DecisionSettings today = before;  // whatever the file says today
  today.ignore_rules = {"REGN-*", "FLOP-*"};
  const Folded f = FoldAll(today);
  ASSERT_EQ(f.outcomes.size(), 2u);
  EXPECT_EQ(f.outcomes.at(1).state, OutcomeState::kSkipped);
  EXPECT_EQ(f.outcomes.at(1).last_error, "ignored:REGN-*");
  EXPECT_EQ(f.outcomes.at(2).last_error.find("ignored:"), std::string::npos)
      << f.outcomes.at(2).last_error;
  EXPECT_EQ(f.settings_since, 2);

  // Another configuration gives the same digest, record for record.
  EXPECT_EQ(FoldAll(Defaults()).digest, f.digest);
}

// events.flight-state (docs/dispatch.md#event-payloads): from the offset of
// the SETTINGS record that says omit, KAFKA:msg events are the same events
// with the flight cut out; the schedule's events and the mirror's flight rows
// stay whole. Compared with the same log under full throughout.
TEST_F(FoldSettingsTest, EventsLeaveTheFlightOutFromTheOffsetThatSaysSo) {
  const DecisionSettings full = Defaults();
  DecisionSettings omit = full;
  omit.omit_event_flight = true;
  const MicrosSinceEpoch t0 = Local(2021, 1, 23, 1);  // the snapshot's day
  auto write_log = [&](const DecisionSettings& from_offset_3) {
    log_.reset();
    fs::remove_all(dir_.path() + "/log");
    auto log = LogStore::Open(dir_.path() + "/log", &clock_);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    log_ = std::move(*log);
    clock_.Set(t0);
    mailbox_id_ = 0;
    AddSettings(full, true);
    AddMessage(Corpus("SCHD-DNLD-1.xml", 1));  // creates the flights: KAFKA:schd
    AddMessage(Corpus("FLOP-ACFT-1.xml", 2));  // flights 15 and 16
    AddSettings(from_offset_3, false);
    AddMessage(Corpus("FLOP-DELY-1.xml", 3));
    AddMessage(Corpus("SCHD-DNLD-1.xml", 4));  // a second snapshot
  };
  write_log(full);
  const Folded base = FoldAll(full);
  write_log(omit);
  const Folded f = FoldAll(full);  // today's file says full: the log decides

  ASSERT_EQ(f.events.size(), base.events.size());
  int cut = 0;
  for (std::size_t i = 0; i < f.events.size(); ++i) {
    const EventRow& e = f.events[i];
    EventRow want = base.events[i];
    ASSERT_NE(want.payload_json.find("\"flight\":"), std::string::npos) << want.payload_json;
    if (e.target == "KAFKA:msg" && e.state_version > 3) {
      const std::size_t from = want.payload_json.find(",\"flight\":");
      const std::size_t to = want.payload_json.find(",\"op\":");
      ASSERT_LT(from, to);
      want.payload_json.erase(from, to - from);
      ++cut;
    }
    EXPECT_EQ(e, want) << e.payload_json;
  }
  EXPECT_GT(cut, 0);
  EXPECT_LT(cut, static_cast<int>(f.events.size()));  // the schedule's kept theirs
  EXPECT_FALSE(f.flights.empty());
  EXPECT_EQ(f.flights, base.flights);

  const Folded g = FoldAll(omit);
  EXPECT_EQ(g.events, f.events);
  EXPECT_EQ(g.digest, f.digest);
  EXPECT_NE(f.digest, base.digest);  // the settings record differs
}

TEST_F(FoldSettingsTest, TheFirstRecordOfAnOldLogStandsForTheRecordsBeforeIt) {
  DecisionSettings recorded = Defaults();
  recorded.ignore_rules = {"LDM-*"};
  AddMessage(Corpus("REGN-ADD-1.xml", 1));  // written before settings were recorded
  AddSettings(recorded, true);
  const Folded f = FoldAll(Defaults());  // the fallback would ignore REGN
  ASSERT_EQ(f.outcomes.size(), 1u);
  EXPECT_EQ(f.outcomes.at(1).last_error.find("ignored:"), std::string::npos)
      << f.outcomes.at(1).last_error;
}

TEST_F(FoldSettingsTest, SeedModeSwitchedOnAfterDeadRecordsDoesNotHoldThem) {
  AddSettings(Defaults(), true);
  AddMessage("<MSG><META></MSG>");  // DEAD MALFORMED with seed mode off
  AddMessage(Corpus("FLOP-ACFT-1.xml", 2));
  DecisionSettings seed = Defaults();
  seed.retry_deterministic = true;
  AddSettings(seed, false);

  const Folded f = FoldAll(seed);
  EXPECT_FALSE(f.held);
  ASSERT_EQ(f.outcomes.size(), 2u);
  EXPECT_EQ(f.outcomes.at(1).state, OutcomeState::kDead);
  EXPECT_EQ(f.outcomes.at(1).error_class, "MALFORMED");
}

TEST_F(FoldSettingsTest, TheZoneRulesInTheLogDecideNotTheSystemFile) {
  // A zoneinfo directory whose Europe/Berlin is later replaced.
  const std::string zoneinfo = dir_.path() + "/zoneinfo";
  fs::create_directories(zoneinfo + "/Europe");
  fs::copy_file("/usr/share/zoneinfo/Europe/Berlin", zoneinfo + "/Europe/Berlin");
  Config c;
  c.airport_timezone = "Europe/Berlin";
  auto berlin = DecisionSettings::FromConfig(c, zoneinfo);
  ASSERT_TRUE(berlin.ok()) << berlin.status().ToString();
  AddSettings(*berlin, true);
  AddMessage(Corpus("FLOP-ACFT-1.xml", 1));
  AddMessage(Corpus("FLOP-ACFT-1.xml", 2));  // flights 15 and 16
  const Folded with_berlin = FoldAll(*berlin);

  fs::copy_file("/usr/share/zoneinfo/Asia/Tokyo", zoneinfo + "/Europe/Berlin",
                fs::copy_options::overwrite_existing);
  auto replaced = DecisionSettings::FromConfig(c, zoneinfo);
  ASSERT_TRUE(replaced.ok());
  EXPECT_NE(*replaced, *berlin);
  EXPECT_NE(DescribeSettingsChange(*berlin, *replaced).find("airport.timezone-rules: "),
            std::string::npos);
  // The log's rules decide: the same digest under the replaced file.
  EXPECT_EQ(FoldAll(*replaced).digest, with_berlin.digest);

  // The rules do matter: the same messages under the replaced rules differ.
  TempDir other;
  auto log2 = LogStore::Open(other.path() + "/log", &clock_);
  ASSERT_TRUE(log2.ok());
  log_ = std::move(*log2);
  mailbox_id_ = 0;
  AddSettings(*replaced, true);
  AddMessage(Corpus("FLOP-ACFT-1.xml", 1));
  AddMessage(Corpus("FLOP-ACFT-1.xml", 2));  // flights 15 and 16
  EXPECT_NE(FoldAll(*berlin).digest, with_berlin.digest);
  log_.reset();  // before `other` goes
}

}  // namespace
}  // namespace msgx
