// The bench's traffic (tools/bench_traffic.h) through the real decoder and
// fold: every message is new and valid, ends SUCCEEDED, and yields exactly
// the one event the bench counts it by.
#include "tools/bench_traffic.h"

#include <gtest/gtest.h>

#include <map>

#include "base/log.h"
#include "codecs/sis_decoder.h"
#include "state/log_store.h"
#include "stream/fold/fold.h"
#include "stream/fold/log_fold_source.h"
#include "stream/fold/sis_fold_decoder.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT
using app::TrafficKind;
using app::TrafficMessage;

TEST(BenchTraffic, EveryMessageIsAValidChangeWithOneEvent) {
  (void)InitLogging("off");
  auto templates = app::LoadTrafficTemplates(MSGX_CORPUS_DIR);
  ASSERT_TRUE(templates.ok()) << templates.status().ToString();
  // Seven flights, so each is visited often enough to cycle every field
  // and value; SEQN starts near the wrap.
  app::TrafficGenerator gen(*templates, 7, 999'990);
  const app::LocalTime now{2021, 1, 23, 9, 30, 0};
  std::vector<TrafficMessage> msgs = gen.Setup(now);
  ASSERT_EQ(msgs.size(), 1u);
  const std::size_t setup = msgs.size();
  for (int i = 0; i < 2000; ++i) msgs.push_back(gen.Next(now));
  EXPECT_EQ(msgs[setup].seqn, 999'991);
  EXPECT_EQ(msgs[setup + 9].seqn, 1);  // wrapped

  TempDir dir;
  ManualClock clock(Local(2021, 1, 23, 1, 30));
  auto log = LogStore::Open(dir.path() + "/log", &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::vector<LogRecordData> records;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    records.push_back(
        LogRecordData::Message(static_cast<std::int64_t>(i + 1), msgs[i].xml, std::nullopt));
  }
  CaptureProgress progress;
  progress.watermark = static_cast<std::int64_t>(msgs.size());
  ASSERT_TRUE((*log)->Append(records, progress).ok());

  const TimeZone tz = TimeZone::Fixed("Asia/Shanghai", 8 * 3600);
  const TimeZoneAirportZone zone(tz);
  const sis::SisDecoder sis_decoder(tz);
  const SisFoldDecoder decoder(sis_decoder);
  LogFoldSource source([&](std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
    return (*log)->Read(from, max, out);
  });
  ASSERT_TRUE(source.BuildQuarantineIndex().ok());
  auto store = StateStore::Open(dir.path() + "/state", {false, false});
  ASSERT_TRUE(store.ok());
  FoldOptions options;
  options.zone = &zone;
  Fold fold(store->get(), &decoder, &source, options);
  ASSERT_TRUE(fold.Open().ok());
  std::vector<FoldInput> in;
  ASSERT_TRUE(source.ReadBatch(0, 10'000, &in).ok());
  ASSERT_EQ(in.size(), msgs.size());
  Status s = fold.Process(in);
  ASSERT_TRUE(s.ok()) << s.ToString();

  std::map<std::int64_t, std::vector<std::string>> targets;  // mailbox id -> event targets
  auto ranges = (*store)->PendingRanges();
  ASSERT_TRUE(ranges.ok());
  for (const auto& [first, last] : *ranges) {
    auto p = (*store)->PendingCovering(first);
    ASSERT_TRUE(p.ok() && p->has_value());
    for (const EventRow& e : (*p)->events) targets[e.source_msg_id].push_back(e.target);
  }
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    const auto id = static_cast<std::int64_t>(i + 1);
    auto outcome = (*store)->GetOutcome(id);
    ASSERT_TRUE(outcome.ok() && outcome->has_value()) << i;
    EXPECT_EQ((*outcome)->state, OutcomeState::kSucceeded)
        << i << " " << msgs[i].type << " " << msgs[i].styp << " " << (*outcome)->last_error;
    if (i < setup) {
      EXPECT_EQ(targets[id].size(), 7u);  // one per flight created
      continue;
    }
    const char* want = msgs[i].kind == TrafficKind::kFlop       ? "KAFKA:msg"
                       : msgs[i].kind == TrafficKind::kSchedule ? "KAFKA:schd"
                                                                : "KAFKA:ref";
    EXPECT_EQ(targets[id], std::vector<std::string>{want}) << i << " " << msgs[i].styp;
  }
  EXPECT_EQ(fold.counters().succeeded, static_cast<std::int64_t>(msgs.size()));
}

}  // namespace
}  // namespace msgx
