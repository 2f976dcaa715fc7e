// SCHD snapshots and upserts, SCHS seasons, reference data
// (docs/fold.md#schedules, docs/fold.md#reference-data).
#include <gtest/gtest.h>

#include "stream/fold/handlers/handlers.h"
#include "stream/fold/state_overlay.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

const FixedZone kZone(8 * 3600);

class ScheduleTest : public ::testing::Test {
 protected:
  ScheduleTest() : state_(nullptr) {}

  void SeedFlight(const std::string& flid, MicrosSinceEpoch sodt,
                  const std::map<std::string, Value>& extra = {}) {
    Flight f;
    f.flid = flid;
    f.data.fields["SODT"] = Value::Time(sodt);
    f.data.fields["ACFT"] = Value::Text("OLD");
    for (auto& [k, v] : extra) f.data.fields[k] = v;
    Decision d;
    FlightChange c;
    c.flid = flid;
    c.flight = std::make_shared<Flight>(f);
    d.flights.push_back(c);
    state_.Apply(d);
  }

  Decision Run(const sis::DecodedMessage& m, bool clear = false) {
    DecideContext ctx;
    ctx.now_micros = now_;
    ctx.offset = 42;
    ctx.zone = &kZone;
    ctx.snapshot_clear_missing = clear;
    auto d = Decide(state_, m, ctx);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    if (d.ok()) state_.Apply(*d);
    return d.ok() ? *d : Decision{};
  }

  static sis::DecodedMessage Schd(const std::string& styp, std::vector<sis::ScheduleRecord> r) {
    sis::DecodedMessage m;
    m.meta.type = "SCHD";
    m.meta.styp = styp;
    sis::ScheduleBody b;
    b.records = std::move(r);
    m.body = b;
    return m;
  }

  bool Has(const std::string& flid) { return state_.GetFlight(flid)->has_value(); }
  Flight Get(const std::string& flid) { return **state_.GetFlight(flid); }

  MicrosSinceEpoch now_ = Local(2026, 11, 30, 9);  // the day: 30 Nov (airport time)
  StateOverlay state_;
};

TEST_F(ScheduleTest, SnapshotDeletesUnnamedFlightsInWindowOnly) {
  SeedFlight("A", Local(2026, 11, 30, 8));   // in window, not named ⇒ deleted
  SeedFlight("B", Local(2026, 11, 30, 20));  // in window, named but skipped ⇒ kept
  SeedFlight("C", Local(2026, 12, 2, 10));   // after the window ⇒ kept
  SeedFlight("D", Local(2026, 11, 29, 10));  // before the day ⇒ kept
  Decision d = Run(Schd("DNLD", {Fltr(1, "N", Local(2026, 11, 30, 7), "A320"),
                                 Fltr(2, "B", Local(2026, 11, 30, 20), "-"),
                                 Fltr(3, "M", Local(2026, 12, 1, 6), "B738"),
                                 Fltr(4, "OLD", Local(2026, 11, 29, 23), "B738")}));
  EXPECT_EQ(d.state, OutcomeState::kSucceeded);
  EXPECT_TRUE(d.new_generation);
  EXPECT_TRUE(Has("N"));
  EXPECT_TRUE(Has("M"));
  EXPECT_FALSE(Has("OLD"));  // SODT before the day: skipped
  EXPECT_FALSE(Has("A"));
  EXPECT_TRUE(Has("B"));
  EXPECT_TRUE(Has("C"));
  EXPECT_TRUE(Has("D"));
  ASSERT_EQ(d.skipped.size(), 2u);
  EXPECT_EQ(d.skipped[0].key, "B");
  EXPECT_EQ(d.skipped[0].reason, "missing ACFT");
  // Events: upserts in FLTR order, then the window delete.
  ASSERT_EQ(d.flights.size(), 3u);
  EXPECT_EQ(d.flights[2].op, ChangeOp::kDelete);
  EXPECT_EQ(d.flights[2].flid, "A");
  EXPECT_EQ(d.flights[2].cause, "snapshot-window");
  EXPECT_FALSE(Get("N").data.fields.count("FLID"));
}

TEST_F(ScheduleTest, SnapshotKeepsFieldsNotCarriedUnlessClearMode) {
  SeedFlight("K", Local(2026, 11, 30, 10), {{"STND", Value::Text("S5")}});
  Run(Schd("DNLD", {Fltr(1, "K", Local(2026, 11, 30, 10), "A320")}));
  EXPECT_EQ(Get("K").data.Get("STND"), Value::Text("S5"));
  EXPECT_EQ(Get("K").data.Get("ACFT"), Value::Text("A320"));
  Run(Schd("RESP", {Fltr(1, "K", Local(2026, 11, 30, 10), "A320")}), /*clear=*/true);
  EXPECT_TRUE(Get("K").data.Get("STND").is_null());
}

TEST_F(ScheduleTest, StaleSnapshotSkipped) {
  SeedFlight("A", Local(2026, 11, 29, 8));
  Decision d = Run(Schd("DNLD", {Fltr(1, "X", Local(2026, 11, 29, 23, 59), "A320")}));
  EXPECT_EQ(d.state, OutcomeState::kSkipped);
  EXPECT_EQ(d.reason, "stale-snapshot");
  EXPECT_TRUE(d.flights.empty());
  EXPECT_FALSE(d.new_generation);
  EXPECT_TRUE(Has("A"));
}

TEST_F(ScheduleTest, DelAndUpsertStyps) {
  Run(Schd("ADD", {Fltr(1, "U", Local(2026, 11, 30, 10), "A320")}));
  EXPECT_TRUE(Has("U"));
  // UPD of an existing flight may omit required fields; creating may not.
  Decision d = Run(Schd("UPD", {Fltr(1, "U", Local(2026, 11, 30, 11), "-"),
                                Fltr(2, "V", Local(2026, 11, 30, 11), "-")}));
  EXPECT_EQ(Get("U").data.Get("SODT"), Value::Time(Local(2026, 11, 30, 11)));
  EXPECT_EQ(Get("U").data.Get("ACFT"), Value::Text("A320"));
  EXPECT_FALSE(Has("V"));
  EXPECT_EQ(d.skipped.size(), 1u);
  d = Run(Schd("DEL", {Fltr(1, "U", 0, "A320")}));
  EXPECT_FALSE(Has("U"));
  EXPECT_EQ(d.flights[0].cause, "schd-del");
}

sis::DecodedMessage Season(const std::string& name, MicrosSinceEpoch s, MicrosSinceEpoch e) {
  sis::DecodedMessage m;
  m.meta.type = "SCHS";
  m.meta.styp = "DNLD";
  sis::ScheduleBody b;
  b.seasonal = true;
  b.snam = Text(name);
  b.sdat = Time(s);
  b.edat = Time(e);
  sis::ScheduleRecord r;
  r.fields = {Leaf("ALCD", "CA"), Leaf("FLNO", "CA1")};
  b.records.push_back(r);
  m.body = b;
  return m;
}

TEST_F(ScheduleTest, SchsKeepsNewAndLatestOther) {
  Run(Season("S26", Local(2026, 3, 29), Local(2026, 10, 24)));
  Run(Season("W26", Local(2026, 10, 25), Local(2027, 3, 27)));
  EXPECT_EQ(*state_.ReferenceKeys("SCHS"),
            (std::vector<std::string>{"20260329-20261024", "20261025-20270327"}));
  Run(Season("S27", Local(2027, 3, 28), Local(2027, 10, 30)));
  EXPECT_EQ(*state_.ReferenceKeys("SCHS"),
            (std::vector<std::string>{"20261025-20270327", "20270328-20271030"}));
  // Same start and end: replaced, the other kept.
  Decision d = Run(Season("S27b", Local(2027, 3, 28), Local(2027, 10, 30)));
  EXPECT_EQ(state_.ReferenceKeys("SCHS")->size(), 2u);
  ASSERT_EQ(d.references.size(), 1u);
  EXPECT_EQ(d.references[0].record.data.Get("SNAM"), Value::Text("S27b"));
}

sis::DecodedMessage Ref(const std::string& type, const std::string& styp,
                        const std::vector<std::pair<std::string, std::string>>& recs) {
  sis::DecodedMessage m;
  m.meta.type = type;
  m.meta.styp = styp;
  sis::ReferenceBody b;
  b.type = type;
  int i = 0;
  for (auto& [k, v] : recs) {
    sis::ReferenceRecord r;
    r.index = ++i;
    r.key_name = "ITAT";
    r.key = k;
    r.fields = {Leaf("ITAT", k), Leaf("NAME", v)};
    b.records.push_back(r);
  }
  m.body = b;
  return m;
}

TEST_F(ScheduleTest, ReferenceUpsertDeleteReplace) {
  Decision d = Run(Ref("AIRC", "ADD", {{"320", "A320"}, {"738", "B737"}}));
  EXPECT_EQ(d.references.size(), 2u);
  EXPECT_EQ((*state_.GetReference("AIRC", "320"))->data.Get("NAME"), Value::Text("A320"));
  EXPECT_FALSE((*state_.GetReference("AIRC", "320"))->data.fields.count("ITAT"));
  d = Run(Ref("AIRC", "UPD", {{"320", "A320"}}));
  EXPECT_TRUE(d.references.empty());  // unchanged
  d = Run(Ref("AIRC", "DEL", {{"738", ""}}));
  EXPECT_EQ(d.references[0].op, ChangeOp::kDelete);
  // A record not from the AODB survives a full replace.
  ReferenceRecord manual;
  manual.type = "AIRC";
  manual.key = "MAN";
  manual.source = "operator";
  Decision seed;
  ReferenceChange rc;
  rc.type = "AIRC";
  rc.key = "MAN";
  rc.record = manual;
  seed.references.push_back(rc);
  state_.Apply(seed);
  Run(Ref("AIRC", "ADD", {{"777", "B777"}}));
  d = Run(Ref("AIRC", "DNLD", {{"320", "A320neo"}, {"321", "A321"}}));
  EXPECT_EQ(*state_.ReferenceKeys("AIRC"), (std::vector<std::string>{"320", "321", "MAN"}));
  EXPECT_EQ(d.references.size(), 3u);  // 320 updated, 321 added, 777 deleted
}

TEST_F(ScheduleTest, UnsupportedReferenceStyp) {
  DecideContext ctx;
  ctx.zone = &kZone;
  auto d = Decide(state_, Ref("AIRC", "XYZ", {{"1", "x"}}), ctx);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().error_class(), ErrorClass::kUnsupported);
}

}  // namespace
}  // namespace msgx
