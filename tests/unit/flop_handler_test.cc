// FLOP handler (the STYP table of docs/fold.md#flop-updates): set, clear,
// reject and unchanged for each payload kind; child lists; FLOP never creates a
// flight.
#include <gtest/gtest.h>

#include "stream/fold/handlers/handlers.h"
#include "stream/fold/state_overlay.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

const FixedZone kZone(8 * 3600);

class FlopTest : public ::testing::Test {
 protected:
  FlopTest() : state_(nullptr) {
    Flight f;
    f.flid = "100";
    f.data.fields["ALCD"] = Value::Text("CA");
    f.data.fields["SODT"] = Value::Time(Local(2026, 11, 30, 12));
    f.data.fields["STND"] = Value::Text("S1");
    f.data.fields["EOBT"] = Value::Time(Local(2026, 11, 30, 11));
    Fields stand;
    stand["PSNO"] = Value::Text("1");
    stand["PSST"] = Value::Text("504");
    f.data.lists["PSDT"] = Entries{stand};
    Seed(f);
  }

  void Seed(const Flight& f) {
    Decision d;
    FlightChange c;
    c.flid = f.flid;
    c.flight = std::make_shared<Flight>(f);
    d.flights.push_back(c);
    state_.Apply(d);
  }

  // Decides one FLOP message with the given records and applies it.
  Decision Run(const std::string& styp, std::vector<sis::FlopRecord> recs) {
    sis::DecodedMessage m;
    m.meta.type = "FLOP";
    m.meta.styp = styp;
    sis::FlopBody b;
    int i = 0;
    for (auto& r : recs) {
      r.index = ++i;
      b.records.push_back(std::move(r));
    }
    m.body = b;
    DecideContext ctx;
    ctx.now_micros = Local(2026, 11, 30, 9);
    ctx.offset = 7;
    ctx.zone = &kZone;
    auto d = Decide(state_, m, ctx);
    EXPECT_TRUE(d.ok()) << d.status().ToString();
    state_.Apply(*d);
    return *d;
  }

  static sis::FlopRecord Rec(sis::FlopPayload p, const std::string& flid = "100") {
    sis::FlopRecord r;
    r.flid = flid;
    r.payload = std::move(p);
    return r;
  }

  Flight Get(const std::string& flid = "100") {
    auto f = state_.GetFlight(flid);
    EXPECT_TRUE(f.ok() && f->has_value());
    return f.ok() && f->has_value() ? **f : Flight{};
  }

  StateOverlay state_;
};

TEST_F(FlopTest, TextSetRejectUnchanged) {
  Decision d = Run("STND", {Rec(sis::TextPayload{Text("S9")})});
  EXPECT_EQ(d.state, OutcomeState::kSucceeded);
  ASSERT_EQ(d.flights.size(), 1u);
  ASSERT_EQ(d.flights[0].changes.size(), 1u);
  EXPECT_EQ(d.flights[0].changes[0].name, "STND");
  EXPECT_EQ(d.flights[0].changes[0].before, Value::Text("S1"));
  EXPECT_EQ(d.flights[0].changes[0].after, Value::Text("S9"));
  EXPECT_EQ(Get().version, 7);

  d = Run("STND", {Rec(sis::TextPayload{Text("")})});
  EXPECT_TRUE(d.flights.empty());
  ASSERT_EQ(d.rejected.size(), 1u);
  EXPECT_EQ(d.state, OutcomeState::kSucceeded);
  EXPECT_EQ(Get().data.Get("STND"), Value::Text("S9"));

  d = Run("STND", {Rec(sis::TextPayload{Text("S9")})});
  EXPECT_TRUE(d.flights.empty());  // unchanged ⇒ no event
  EXPECT_TRUE(Events(d).empty());
}

TEST_F(FlopTest, UnknownFlightSkippedNeverCreated) {
  Decision d = Run("ACFT", {Rec(sis::TextPayload{Text("A320")}, "999")});
  EXPECT_EQ(d.state, OutcomeState::kSkipped);
  EXPECT_EQ(d.reason, "unknown-flight:999");
  EXPECT_FALSE(state_.GetFlight("999")->has_value());
  // One known, one unknown: applied, the unknown one skipped.
  d = Run("ACFT",
          {Rec(sis::TextPayload{Text("A320")}, "999"), Rec(sis::TextPayload{Text("A320")})});
  EXPECT_EQ(d.state, OutcomeState::kSucceeded);
  EXPECT_EQ(d.flights.size(), 1u);
}

TEST_F(FlopTest, TimeSetClearReject) {
  sis::TimePayload p{Time(Local(2026, 11, 30, 11, 30)), true};
  Decision d = Run("EOBT", {Rec(p)});
  ASSERT_EQ(d.flights.size(), 1u);
  EXPECT_EQ(Get().data.Get("EOBT"), Value::Time(Local(2026, 11, 30, 11, 30)));
  sis::TimePayload bad;
  bad.value.state = sis::TimeState::kUnparsable;
  bad.reject_unparsable = true;
  d = Run("EOBT", {Rec(bad)});
  EXPECT_EQ(d.rejected.size(), 1u);
  EXPECT_TRUE(d.flights.empty());
  d = Run("EOBT", {Rec(sis::TimePayload{EmptyTime(), true})});
  ASSERT_EQ(d.flights.size(), 1u);
  EXPECT_TRUE(Get().data.Get("EOBT").is_null());
  d = Run("EOBT", {Rec(sis::TimePayload{sis::TimeField{}, true})});  // missing: clear, unchanged
  EXPECT_TRUE(d.flights.empty());
  d = Run("APPT", {Rec(sis::TimePayload{sis::TimeField{}, false})});
  EXPECT_TRUE(d.flights.empty());
}

TEST_F(FlopTest, CharIntHnagVippTaop) {
  EXPECT_EQ(Run("FLTY", {Rec(sis::CharPayload{Text("")})}).rejected.size(), 1u);
  EXPECT_EQ(Run("FLTY", {Rec(sis::CharPayload{Text("J")})}).flights.size(), 1u);
  sis::IntField n;
  EXPECT_EQ(Run("MAXP", {Rec(sis::IntPayload{n})}).rejected.size(), 1u);
  n.presence = sis::Presence::kValue;
  n.value = 180;
  Run("MAXP", {Rec(sis::IntPayload{n})});
  EXPECT_EQ(Get().data.Get("MAXP"), Value::Int(180));

  sis::HnagPayload h;
  h.fhag = n;
  h.phag = n;
  Run("HNAG", {Rec(h)});
  h.fhag = sis::IntField{sis::Presence::kEmpty, 0, ""};  // clear that one
  h.phag = sis::IntField{};                              // missing: kept
  Run("HNAG", {Rec(h)});
  EXPECT_TRUE(Get().data.Get("FHAG").is_null());
  EXPECT_EQ(Get().data.Get("PHAG"), Value::Int(180));

  Run("VIPP", {Rec(sis::VippPayload{Text("1"), Text("x")})});
  Run("VIPP", {Rec(sis::VippPayload{Text(""), Missing()})});
  EXPECT_TRUE(Get().data.Get("VIPP").is_null());
  EXPECT_EQ(Get().data.Get("VIPR"), Value::Text("x"));

  Run("TAOP", {Rec(sis::TaopPayload{Text("T"), Text("CA1"), Text("55")})});
  EXPECT_EQ(Get().data.Get("TAID"), Value::Text("55"));
  Decision d = Run("TAOP", {Rec(sis::TaopPayload{Text("T"), Text(""), Text("55")})});
  EXPECT_EQ(d.flights[0].changes.size(), 3u);  // any empty ⇒ clear all three
  EXPECT_TRUE(Get().data.Get("TAOP").is_null());
}

TEST_F(FlopTest, ExssFdivFretFlabPort) {
  EXPECT_EQ(Run("EXSS", {Rec(sis::ExssPayload{Missing(), Text("c")})}).rejected.size(), 1u);
  Run("EXSS", {Rec(sis::ExssPayload{Text("D"), Text("c")})});
  EXPECT_EQ(Get().data.Get("EXSC"), Value::Text("D"));

  sis::FdivPayload fd{sis::Presence::kValue, Text("PEK"), Text("UP"), Text("weather")};
  EXPECT_EQ(Run("FDIV", {Rec(fd)}).rejected.size(), 1u);
  fd.ddir = Text("TO");
  Run("FDIV", {Rec(fd)});
  EXPECT_EQ(Get().data.Get("DDES"), Value::Text("PEK"));
  fd.ddes = Text("");
  fd.ddir = Text("??");  // DDES empty ⇒ clear, DDIR not looked at
  EXPECT_EQ(Run("FDIV", {Rec(fd)}).flights.size(), 1u);
  EXPECT_TRUE(Get().data.Get("FDIV").is_null());

  EXPECT_EQ(Run("FRET", {Rec(sis::FretPayload{sis::Presence::kValue, Text("X"), Text("r")})})
                .rejected.size(),
            1u);
  Run("FRET", {Rec(sis::FretPayload{sis::Presence::kValue, Text("A"), Text("r")})});
  EXPECT_EQ(Get().data.Get("REID"), Value::Text("A"));
  Run("FRET", {Rec(sis::FretPayload{sis::Presence::kEmpty, Missing(), Missing()})});
  EXPECT_TRUE(Get().data.Get("REID").is_null());

  EXPECT_EQ(Run("FLAB", {Rec(sis::FlabPayload{sis::Presence::kValue, Text("Z"), Text("r")})})
                .rejected.size(),
            1u);
  Run("FLAB", {Rec(sis::FlabPayload{sis::Presence::kValue, Text("G"), Text("r")})});
  EXPECT_EQ(Get().data.Get("ARES"), Value::Text("G"));

  sis::PortPayload port{sis::Presence::kValue, Time(Local(2026, 11, 30, 13)), Missing()};
  EXPECT_EQ(Run("PORT", {Rec(port)}).rejected.size(), 1u);
  port.poid = Text("O");
  Run("PORT", {Rec(port)});
  EXPECT_EQ(Get().data.Get("POTM"), Value::Time(Local(2026, 11, 30, 13)));
  port.potm = EmptyTime();
  Run("PORT", {Rec(port)});
  EXPECT_TRUE(Get().data.Get("POTM").is_null());
}

sis::ListEntry Entry(const std::string& name, const std::string& key_name, const std::string& key,
                     std::vector<sis::Element> children, bool key_is_attr = true) {
  sis::ListEntry e;
  e.key = Text(key);
  e.element.name = name;
  if (key_is_attr) {
    e.element.attributes.push_back({key_name, key});
  } else {
    children.insert(children.begin(), Leaf(key_name, key));
  }
  e.element.children = std::move(children);
  return e;
}

sis::ListPayload List(const std::string& name, const std::string& key_name,
                      std::vector<sis::ListEntry> entries) {
  sis::ListPayload p;
  p.element_name = name;
  p.key_name = key_name;
  p.all_blank = true;
  for (const auto& e : entries) {
    if (!e.element.IsBlank()) p.all_blank = false;
  }
  p.entries = std::move(entries);
  return p;
}

TEST_F(FlopTest, ReplaceListsBySequence) {
  auto p = List("GTDT", "GTNO",
                {Entry("GTDT", "GTNO", "2", {Leaf("GATE", "G33")}),
                 Entry("GTDT", "GTNO", "10", {Leaf("GATE", "G10")}),
                 Entry("GTDT", "GTNO", "1", {Leaf("GATE", "G28")})});
  Run("GTDT", {Rec(p)});
  const Flight gates_flight = Get();  // held: the references below point into it
  const Entries& gates = gates_flight.data.lists.at("GTDT");
  ASSERT_EQ(gates.size(), 3u);
  EXPECT_EQ(gates[0].at("GTNO"), Value::Text("1"));
  EXPECT_EQ(gates[2].at("GTNO"), Value::Text("10"));
  // Replace: a shorter list replaces the whole list.
  Run("GTDT", {Rec(List("GTDT", "GTNO", {Entry("GTDT", "GTNO", "1", {Leaf("GATE", "G1")})}))});
  EXPECT_EQ(Get().data.lists.at("GTDT").size(), 1u);
  // Same again: unchanged, no event. Empty: rejected.
  EXPECT_TRUE(
      Run("GTDT", {Rec(List("GTDT", "GTNO", {Entry("GTDT", "GTNO", "1", {Leaf("GATE", "G1")})}))})
          .flights.empty());
  EXPECT_EQ(Run("GTDT", {Rec(List("GTDT", "GTNO", {}))}).rejected.size(), 1u);
  // CKDT: replace, an empty payload empties the list.
  Run("CKDT", {Rec(List("CKDT", "CKNO", {Entry("CKDT", "CKNO", "1", {Leaf("CKDS", "A01")})}))});
  EXPECT_EQ(Get().data.lists.at("CKDT").size(), 1u);
  Run("CKDT", {Rec(List("CKDT", "CKNO", {}))});
  EXPECT_FALSE(Get().data.lists.count("CKDT"));
}

TEST_F(FlopTest, DelyUpsertByCodeAndBareDeleteAll) {
  sis::DelyPayload p;
  sis::DelayEntry yy;
  yy.code = Text("YY");
  yy.dura.state = sis::TimeState::kValue;
  yy.dura.format = sis::TimeFormat::kHhmm;
  yy.dura.minutes = 120;
  yy.comment = Text("late");
  sis::DelayEntry xx = yy;
  xx.code = Text("XX");
  p.entries = {yy, xx};
  Run("DELY", {Rec(p)});
  ASSERT_EQ(Get().data.lists.at("DELY").size(), 2u);
  EXPECT_EQ(Get().data.lists.at("DELY")[0].at("DURA"), Value::Int(120));
  yy.dura.minutes = 61;
  p.entries = {yy};
  Run("DELY", {Rec(p)});
  const Flight delays_flight = Get();  // held: the references below point into it
  const Entries& delays = delays_flight.data.lists.at("DELY");
  ASSERT_EQ(delays.size(), 2u);  // XX kept
  EXPECT_EQ(delays[0].at("DURA"), Value::Int(61));
  sis::DelyPayload bare;
  bare.delete_all = true;
  Decision d = Run("DELY", {Rec(bare)});
  EXPECT_EQ(d.flights.size(), 1u);
  EXPECT_FALSE(Get().data.lists.count("DELY"));
}

TEST_F(FlopTest, ErutSrvtVipf) {
  Run("ERUT", {Rec(List("ERUT", "RTNO",
                        {Entry("ERUT", "RTNO", "1", {Leaf("APCD", "PEK")}),
                         Entry("ERUT", "RTNO", "2", {Leaf("APCD", "SHA")})}))});
  Run("ERUT", {Rec(List("ERUT", "RTNO", {Entry("ERUT", "RTNO", "2", {Leaf("APCD", "CAN")})}))});
  const Flight legs_flight = Get();  // held: the references below point into it
  const Entries& legs = legs_flight.data.lists.at("ERUT");
  ASSERT_EQ(legs.size(), 2u);
  EXPECT_EQ(legs[1].at("APCD"), Value::Text("CAN"));
  sis::ListPayload blank = List("ERUT", "RTNO", {});
  sis::ListEntry empty;
  empty.element.name = "ERUT";
  blank.entries.push_back(empty);
  blank.all_blank = true;
  Run("ERUT", {Rec(blank)});
  EXPECT_FALSE(Get().data.lists.count("ERUT"));

  Run("SRVT",
      {Rec(List("SRVT", "SRTC", {Entry("SRVT", "SRTC", "W", {Leaf("SRQT", "2")}, false)}))});
  EXPECT_EQ(Get().data.lists.at("SRVT").size(), 1u);
  Run("SRVT", {Rec(List("SRVT", "SRTC", {}))});
  EXPECT_FALSE(Get().data.lists.count("SRVT"));

  Run("VIPF",
      {Rec(List("VIPF", "VPCD", {Entry("VIPF", "VPCD", "V1", {Leaf("VFES", "3")}, false)}))});
  Run("VIPF",
      {Rec(List("VIPF", "VPCD", {Entry("VIPF", "VPCD", "V2", {Leaf("VFES", "1")}, false)}))});
  Run("VIPF",
      {Rec(List("VIPF", "VPCD", {Entry("VIPF", "VPCD", "V1", {Leaf("VFES", "4")}, false)}))});
  const Flight vips_flight = Get();  // held: the references below point into it
  const Entries& vips = vips_flight.data.lists.at("VIPF");
  ASSERT_EQ(vips.size(), 2u);  // never deleted, V1 updated
  EXPECT_EQ(vips[0].at("VFES"), Value::Text("4"));
}

TEST_F(FlopTest, PshtTiptPatchStandEntry) {
  sis::ListEntry push;
  push.key = Text("1");
  push.element.name = "PSHT";
  push.element.attributes.push_back({"PSHN", "1"});
  push.element.children = {TimeLeaf("PSTM", Local(2026, 11, 30, 13, 46)), Leaf("PSID", "IN"),
                           Leaf("PUST", "504")};
  Run("PSHT", {Rec(List("PSHT", "PSHN", {push}))});
  const Flight stand_flight = Get();  // held: the references below point into it
  const Fields& stand = stand_flight.data.lists.at("PSDT")[0];
  EXPECT_EQ(stand.at("PSID"), Value::Text("IN"));
  EXPECT_EQ(stand.at("PSTM"), Value::Time(Local(2026, 11, 30, 13, 46)));
  sis::ListEntry trac;
  trac.key = Text("503");
  trac.element.name = "TIPT";
  trac.element.children = {TimeLeaf("TRTM", Local(2026, 11, 30, 13, 50)), Leaf("TRST", "503")};
  EXPECT_EQ(Run("TIPT", {Rec(List("TIPT", "TRST", {trac}))}).rejected.size(), 1u);  // no 503
  trac.element.children[1] = Leaf("TRST", "504");
  Run("TIPT", {Rec(List("TIPT", "TRST", {trac}))});
  EXPECT_EQ(Get().data.lists.at("PSDT")[0].at("TRTM"), Value::Time(Local(2026, 11, 30, 13, 50)));
}

TEST_F(FlopTest, Fdel) {
  EXPECT_EQ(Run("FDEL", {Rec(sis::FdelPayload{sis::Presence::kValue, false})}).rejected.size(), 1u);
  Decision d = Run("FDEL", {Rec(sis::FdelPayload{sis::Presence::kEmpty, true})});
  ASSERT_EQ(d.flights.size(), 1u);
  EXPECT_EQ(d.flights[0].op, ChangeOp::kDelete);
  EXPECT_FALSE(state_.GetFlight("100")->has_value());
}

TEST_F(FlopTest, CanonicalJson) {
  Flight f = Get();
  EXPECT_EQ(FlightJson(f, kZone),
            "{\"ALCD\":\"CA\",\"EOBT\":\"2026-11-30T11:00:00+08:00\",\"FLID\":\"100\","
            "\"PSDT\":[{\"PSNO\":\"1\",\"PSST\":\"504\"}],\"SODT\":\"2026-11-30T12:00:00+08:00\","
            "\"STND\":\"S1\"}");
}

}  // namespace
}  // namespace msgx

namespace msgx {
namespace {

// Every single-value STYP of the FLOP table (docs/fold.md#flop-updates): set,
// unchanged (no event), and its empty/missing/unparsable rule.
TEST_F(FlopTest, EverySingleValueStyp) {
  for (const char* styp : {"ACFT", "RENO", "TRML", "STND", "RUNW", "REMC", "FTSS"}) {
    SCOPED_TRACE(styp);
    EXPECT_EQ(Run(styp, {Rec(sis::TextPayload{Text("V1")})}).flights.size(), 1u);
    EXPECT_TRUE(Run(styp, {Rec(sis::TextPayload{Text("V1")})}).flights.empty());
    Decision d = Run(styp, {Rec(sis::TextPayload{Text("")})});
    EXPECT_EQ(d.rejected.size(), 1u);
    EXPECT_EQ(Get().data.Get(styp), Value::Text("V1"));
  }
  for (const char* styp : {"FLIN", "FLTY"}) {
    SCOPED_TRACE(styp);
    EXPECT_EQ(Run(styp, {Rec(sis::CharPayload{Text("X")})}).flights.size(), 1u);
    EXPECT_TRUE(Run(styp, {Rec(sis::CharPayload{Text("X")})}).flights.empty());
    EXPECT_EQ(Run(styp, {Rec(sis::CharPayload{Missing()})}).rejected.size(), 1u);
  }
  const MicrosSinceEpoch t = Local(2026, 11, 30, 14, 5);
  for (const char* styp : {"APPT", "BOTM", "CNCL", "EGSR", "EGST", "FINT", "LACL"}) {
    SCOPED_TRACE(styp);
    EXPECT_EQ(Run(styp, {Rec(sis::TimePayload{Time(t), false})}).flights.size(), 1u);
    EXPECT_TRUE(Run(styp, {Rec(sis::TimePayload{Time(t), false})}).flights.empty());
    EXPECT_EQ(Run(styp, {Rec(sis::TimePayload{EmptyTime(), false})}).flights.size(), 1u);
    EXPECT_TRUE(Get().data.Get(styp).is_null());
    Run(styp, {Rec(sis::TimePayload{Time(t), false})});
    EXPECT_EQ(Run(styp, {Rec(sis::TimePayload{sis::TimeField{}, false})}).flights.size(), 1u);
    EXPECT_TRUE(Get().data.Get(styp).is_null());
  }
  for (const char* styp :
       {"COBT", "CTOT", "EOBT", "IEST", "NAAT", "NEAT", "PADT", "PEDT", "TOBT"}) {
    SCOPED_TRACE(styp);
    EXPECT_LE(Run(styp, {Rec(sis::TimePayload{Time(t), true})}).flights.size(), 1u);
    EXPECT_EQ(Get().data.Get(styp), Value::Time(t));
    EXPECT_TRUE(Run(styp, {Rec(sis::TimePayload{Time(t), true})}).flights.empty());
    sis::TimePayload bad;
    bad.reject_unparsable = true;
    bad.value.state = sis::TimeState::kUnparsable;
    bad.value.raw = "99XXX99";
    EXPECT_EQ(Run(styp, {Rec(bad)}).rejected.size(), 1u);
    EXPECT_EQ(Get().data.Get(styp), Value::Time(t));
    EXPECT_EQ(Run(styp, {Rec(sis::TimePayload{EmptyTime(), true})}).flights.size(), 1u);
    EXPECT_TRUE(Get().data.Get(styp).is_null());
  }
}

}  // namespace
}  // namespace msgx
