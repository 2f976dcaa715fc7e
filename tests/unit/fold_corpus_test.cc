// The fold end to end over the real pieces: the corpus (172 real SIS
// messages, SEQN made unique) appended to a real log store, decoded by the
// real SIS decoder, folded twice into two state stores.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "base/log.h"
#include "codecs/sis_decoder.h"
#include "state/log_store.h"
#include "stream/fold/decoded_ahead.h"
#include "stream/fold/fold.h"
#include "stream/fold/log_fold_source.h"
#include "stream/fold/read_ahead.h"
#include "stream/fold/sis_fold_decoder.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT
namespace fs = std::filesystem;

std::vector<std::pair<std::string, std::string>> CorpusWithUniqueSeqn() {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(MSGX_CORPUS_DIR)) {
    if (e.path().extension() == ".xml") names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  // The snapshot first, so that FLOP updates find flights 15 and 16.
  std::stable_partition(names.begin(), names.end(),
                        [](const std::string& n) { return n == "SCHD-DNLD-1.xml"; });
  std::vector<std::pair<std::string, std::string>> out;
  const std::regex seqn("<SEQN>[^<]*</SEQN>");
  int i = 0;
  for (const std::string& n : names) {
    std::ifstream in(fs::path(MSGX_CORPUS_DIR) / n, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    out.emplace_back(n,
                     std::regex_replace(ss.str(), seqn, "<SEQN>" + std::to_string(++i) + "</SEQN>",
                                        std::regex_constants::format_first_only));
  }
  return out;
}

// Appends the corpus as messages with mailbox ids first_id + 1 onwards and
// the capture watermark at the last of them.
void AppendCorpus(LogStore& log, const std::vector<std::pair<std::string, std::string>>& corpus,
                  std::int64_t first_id) {
  std::vector<LogRecordData> records;
  for (std::size_t i = 0; i < corpus.size(); ++i) {
    records.push_back(LogRecordData::Message(first_id + static_cast<std::int64_t>(i) + 1,
                                             corpus[i].second, std::nullopt));
  }
  CaptureProgress progress;
  progress.watermark = first_id + static_cast<std::int64_t>(corpus.size());
  ASSERT_TRUE(log.Append(records, progress).ok());
}

TEST(FoldCorpus, RealDecoderAndLogStore) {
  (void)InitLogging("off");
  const auto corpus = CorpusWithUniqueSeqn();
  ASSERT_GE(corpus.size(), 172u);
  TempDir dir;
  ManualClock clock(Local(2021, 1, 23, 1));  // the snapshot's day
  auto log = LogStore::Open(dir.path() + "/log", &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  AppendCorpus(**log, corpus, 0);

  const TimeZone tz = TimeZone::Fixed("Asia/Shanghai", 8 * 3600);
  const TimeZoneAirportZone zone(tz);
  const sis::SisDecoder sis_decoder(tz);
  const SisFoldDecoder decoder(sis_decoder);
  LogFoldSource source([&](std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
    return (*log)->Read(from, max, out);
  });
  ASSERT_TRUE(source.BuildQuarantineIndex().ok());

  std::string digests[2];
  std::vector<EventRow> events[2];
  for (int run = 0; run < 2; ++run) {
    auto store = StateStore::Open(dir.path() + "/state" + std::to_string(run), {false, false});
    ASSERT_TRUE(store.ok());
    FoldOptions options;
    options.zone = &zone;
    options.batch_max = run == 0 ? 1000 : 7;
    Fold fold(store->get(), &decoder, &source, options);
    ASSERT_TRUE(fold.Open().ok());
    std::vector<FoldInput> in;
    ASSERT_TRUE(source.ReadBatch(0, 10'000, &in).ok());
    ASSERT_EQ(in.size(), corpus.size());
    Status s = fold.Process(in);
    ASSERT_TRUE(s.ok()) << s.ToString();
    digests[run] = fold.digest();

    // The pending batches tile the log and carry every outcome and event.
    auto ranges = (*store)->PendingRanges();
    ASSERT_TRUE(ranges.ok());
    std::int64_t next = 0;
    std::map<std::int64_t, OutcomeRow> outcomes;
    std::set<std::string> keys;
    PendingBatchEncoder encoder;  // reused across batches, as the store does
    for (const auto& [first, last] : *ranges) {
      ASSERT_EQ(first, next);
      next = last + 1;
      auto p = (*store)->PendingCovering(first);
      ASSERT_TRUE(p.ok() && p->has_value());
      ASSERT_EQ(DecodePendingBatch(EncodePendingBatch(**p)).value(), **p);
      EXPECT_EQ(encoder.Encode(**p), EncodePendingBatch(**p));
      EXPECT_EQ((*p)->digest.size(), 32u);
      for (const OutcomeRow& o : (*p)->outcomes) outcomes[o.outcome.mailbox_id] = o;
      for (const EventRow& e : (*p)->events) {
        EXPECT_TRUE(keys.insert(e.event_key).second) << e.event_key;
        events[run].push_back(e);
      }
    }
    EXPECT_EQ(next, static_cast<std::int64_t>(corpus.size()));
    EXPECT_EQ(outcomes.size(), corpus.size());
    EXPECT_EQ(outcomes.begin()->second.enqueued_micros, clock.NowMicros());
    std::set<std::string> targets;
    for (const EventRow& e : events[run]) targets.insert(e.target);
    EXPECT_EQ(targets, (std::set<std::string>{"KAFKA:msg", "KAFKA:ref", "KAFKA:schd"}));

    auto outcome = [&](const std::string& file) {
      for (std::size_t i = 0; i < corpus.size(); ++i) {
        if (corpus[i].first == file) {
          return **(*store)->GetOutcome(static_cast<std::int64_t>(i + 1));
        }
      }
      ADD_FAILURE() << file;
      return Outcome{};
    };
    EXPECT_EQ(outcome("SCHD-DNLD-1.xml").state, OutcomeState::kSucceeded);
    EXPECT_EQ(outcome("ABNR-ADD-1.xml").state, OutcomeState::kDead);
    EXPECT_EQ(outcome("ABNR-ADD-1.xml").error_class, "MALFORMED");
    EXPECT_EQ(outcome("REGN-ADD-1.xml").last_error, "ignored:REGN-*");
    EXPECT_EQ(outcome("AIRL-DNLD-1.xml").state, OutcomeState::kSucceeded);
    EXPECT_EQ(outcome("FLOP-GTDT-1.xml").last_error, "unknown-flight:121112312");
    EXPECT_EQ(outcome("FLOP-DELY-1.xml").state, OutcomeState::kSucceeded);
    EXPECT_EQ(outcome("FLOP-FDEL-1.xml").state, OutcomeState::kSucceeded);
    EXPECT_FALSE((*store)->GetFlight("15")->has_value());  // FLOP-FDEL-1 deleted it
    auto f16 = (*store)->GetFlight("16");
    ASSERT_TRUE(f16.ok() && f16->has_value());
    EXPECT_EQ((*f16)->data.Get("ALCD"), Value::Text("YG"));
    EXPECT_EQ(fold.counters().records, static_cast<std::int64_t>(corpus.size()));
    if (run == 0) {
      std::printf("flight 16: %s\n", FlightJson(**f16, zone).c_str());
      std::printf("succeeded=%lld skipped=%lld dead=%lld rejected=%lld\n",
                  static_cast<long long>(fold.counters().succeeded),
                  static_cast<long long>(fold.counters().skipped),
                  static_cast<long long>(fold.counters().dead),
                  static_cast<long long>(fold.counters().rejected_records));
    }
  }
  EXPECT_EQ(digests[0], digests[1]);
  // The same events, byte for byte, whatever the batching.
  EXPECT_EQ(events[0], events[1]);
}

// The corpus, a SETTINGS record that lowers codec.max-bytes (the larger
// messages after it end DEAD), and the corpus again: folded from the
// read-ahead's batches (decoded on its thread) and from the log's records
// (decoded by the fold), the same digest, events and counts.
TEST(FoldCorpus, ReadAheadFoldsTheSame) {
  (void)InitLogging("off");
  const auto corpus = CorpusWithUniqueSeqn();
  TempDir dir;
  ManualClock clock(Local(2021, 1, 23, 1));
  auto log = LogStore::Open(dir.path() + "/log", &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  // Settings with the zone's rules, as the service records them.
  auto base = DecisionSettings::FromConfig(Config{});
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  DecisionSettings small = *base;
  small.codec_max_bytes = 1500;
  AppendCorpus(**log, corpus, 0);
  const auto settings_offset = static_cast<std::int64_t>(corpus.size());
  std::vector<LogRecordData> settings{
      LogRecordData::Command(CommandData{SettingsArgs{small, false}, "test", 0, 0})};
  ASSERT_TRUE((*log)->AppendCommands(settings).ok());
  AppendCorpus(**log, corpus, 1000);
  const std::int64_t last = static_cast<std::int64_t>(*(*log)->last_offset());

  const TimeZone tz = TimeZone::Fixed("Asia/Shanghai", 8 * 3600);
  const TimeZoneAirportZone zone(tz);
  LogFoldSource source([&](std::uint64_t from, std::size_t max,
                           std::vector<LogEntry>* out) { return (*log)->Read(from, max, out); },
                       [&] { return (*log)->CommandIndex(); });
  ASSERT_TRUE(source.BuildQuarantineIndex().ok());

  std::string digests[2];
  std::vector<EventRow> events[2];
  FoldCounters counts[2];
  for (int run = 0; run < 2; ++run) {
    auto store = StateStore::Open(dir.path() + "/state" + std::to_string(run), {false, false});
    ASSERT_TRUE(store.ok());
    FoldOptions options;
    options.settings = *base;
    options.zone = &zone;
    options.make_decoder = SisDecoderFactory();
    Fold fold(store->get(), nullptr, &source, options);
    ASSERT_TRUE(fold.Open().ok());
    if (run == 0) {
      std::vector<FoldInput> in;
      ASSERT_TRUE(source.ReadBatch(0, 10'000, &in).ok());
      ASSERT_TRUE(fold.Process(in).ok());
    } else {
      FoldReadAhead::Options ra;
      ra.batch_max = 50;
      ra.depth = 2;
      ra.fallback = options.settings;
      ra.make_decoder = options.make_decoder;
      ra.zone = &zone;
      FoldReadAhead ahead(&source, 0, last, {}, ra);
      std::int64_t decoded = 0;
      for (;;) {
        auto in = ahead.Next();
        ASSERT_TRUE(in.ok()) << in.status().ToString();
        if (in->empty()) break;
        for (const FoldInput& r : *in) {
          if (r.command) continue;
          // Each message decoded with the settings in force at its offset.
          ASSERT_NE(r.decoded, nullptr) << r.offset;
          EXPECT_EQ(r.decoded->settings->since(),
                    r.offset > settings_offset ? settings_offset : -1);
          ++decoded;
        }
        ASSERT_TRUE(fold.Process(*in).ok());
      }
      EXPECT_EQ(decoded, 2 * static_cast<std::int64_t>(corpus.size()));
    }
    EXPECT_EQ(fold.applied_offset(), last);
    digests[run] = fold.digest();
    counts[run] = fold.counters();
    auto ranges = (*store)->PendingRanges();
    ASSERT_TRUE(ranges.ok());
    for (const auto& [first, end] : *ranges) {
      auto p = (*store)->PendingCovering(first);
      ASSERT_TRUE(p.ok() && p->has_value());
      for (const EventRow& e : (*p)->events) events[run].push_back(e);
    }
  }
  EXPECT_EQ(digests[0], digests[1]);
  EXPECT_EQ(events[0], events[1]);
  EXPECT_EQ(counts[0].succeeded, counts[1].succeeded);
  EXPECT_EQ(counts[0].dead, counts[1].dead);
  // The lowered limit took effect after the SETTINGS record.
  EXPECT_GT(counts[0].dead, 2);
}

// A message decoded ahead with other settings than the fold has in force is
// decoded again by the fold: here a limit that would make it DEAD.
TEST(FoldCorpus, ADecodeAheadWithOtherSettingsIsNotUsed) {
  (void)InitLogging("off");
  const auto corpus = CorpusWithUniqueSeqn();
  const TimeZone tz = TimeZone::Fixed("Asia/Shanghai", 8 * 3600);
  const TimeZoneAirportZone zone(tz);
  auto base = DecisionSettings::FromConfig(Config{});
  ASSERT_TRUE(base.ok()) << base.status().ToString();
  FoldOptions options;
  options.settings = *base;
  options.zone = &zone;
  options.make_decoder = SisDecoderFactory();
  DecisionSettings small = options.settings;
  small.codec_max_bytes = 10;
  auto other = ActiveSettings::Make(small, -1, options.make_decoder, nullptr, &zone);
  ASSERT_TRUE(other.ok());
  std::shared_ptr<const ActiveSettings> shared = std::move(*other);

  FoldInput in;
  in.offset = 0;
  in.mailbox_id = 1;
  in.raw = corpus[0].second;  // the snapshot, SCHD-DNLD-1.xml
  in.decoded = DecodeAhead(shared, in.raw);
  ASSERT_FALSE(in.decoded->meta->ok());  // too big for those settings

  TempDir dir;
  auto store = StateStore::Open(dir.path() + "/state", {false, false});
  ASSERT_TRUE(store.ok());
  Fold fold(store->get(), nullptr, nullptr, options);
  ASSERT_TRUE(fold.Open().ok());
  ASSERT_TRUE(fold.Process({in}).ok());
  auto o = (*store)->GetOutcome(1);
  ASSERT_TRUE(o.ok() && o->has_value());
  EXPECT_EQ((*o)->state, OutcomeState::kSucceeded) << (*o)->last_error;
}

}  // namespace
}  // namespace msgx
