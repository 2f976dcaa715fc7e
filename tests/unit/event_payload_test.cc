// Canonical event payloads (docs/dispatch.md#event-payloads): exact bytes,
// sorted keys, ISO-8601 times with the airport offset, the event_key inside.
#include "stream/fold/event_payload.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

const FixedZone kShanghai(8 * 3600);

EventSource Source() {
  EventSource s;
  s.mailbox_id = 4711;
  s.type = "FLOP";
  s.styp = "GTDT";
  s.seqn = "1243";
  s.dttm_micros = 1'796'000'591'000'000;  // 2026-11-30T01:03:11Z
  return s;
}

TEST(EventPayloadTest, FlightUpsertIsCanonical) {
  auto flight = std::make_shared<Flight>();
  flight->flid = "16";
  flight->version = 42;
  flight->data.fields["STND"] = Value::Text("504");
  flight->data.fields["SODT"] = Value::Time(1'796'000'591'000'000);
  flight->data.lists["GTDT"] = Entries{{{"GTNO", Value::Text("1")}, {"GATE", Value::Text("A1")}}};
  FlightChange c;
  c.op = ChangeOp::kUpsert;
  c.flid = "16";
  c.flight = flight;
  FieldChange gtdt;
  gtdt.name = "GTDT";
  gtdt.is_list = true;
  gtdt.list_after = flight->data.lists["GTDT"];
  FieldChange stnd;
  stnd.name = "STND";
  stnd.before = Value::Null();
  stnd.after = Value::Text("504");
  c.changes = {gtdt, stnd};

  const std::string json = FlightEventJson(EventKey(42, 0, 1), c, 42, Source(), kShanghai);
  EXPECT_EQ(json,
            "{\"changes\":{\"GTDT\":{\"after\":[{\"GATE\":\"A1\",\"GTNO\":\"1\"}],\"before\":[]},"
            "\"STND\":{\"after\":\"504\",\"before\":null}},"
            "\"event_key\":\"42:0:1\",\"flid\":\"16\","
            "\"flight\":{\"FLID\":\"16\",\"GTDT\":[{\"GATE\":\"A1\",\"GTNO\":\"1\"}],"
            "\"SODT\":\"2026-11-30T09:03:11+08:00\",\"STND\":\"504\"},"
            "\"op\":\"UPSERT\","
            "\"source\":{\"dttm\":\"2026-11-30T09:03:11+08:00\",\"mailbox_id\":4711,"
            "\"seqn\":\"1243\",\"styp\":\"GTDT\",\"type\":\"FLOP\"},"
            "\"version\":42}");
  // Same input, same bytes.
  EXPECT_EQ(json, FlightEventJson(EventKey(42, 0, 1), c, 42, Source(), kShanghai));
}

// Flight 15 deleted by FLOP FDEL; its last state holds ACFT 733.
FlightChange DeleteOf15() {
  auto last = std::make_shared<Flight>();
  last->flid = "15";
  last->data.fields["ACFT"] = Value::Text("733");
  FlightChange c;
  c.op = ChangeOp::kDelete;
  c.flid = "15";
  c.flight = last;
  c.cause = "fdel";
  return c;
}

EventSource FdelSource() {
  EventSource s = Source();
  s.styp = "FDEL";
  return s;
}

TEST(EventPayloadTest, FlightDeleteCarriesItsCauseAndLastState) {
  EXPECT_EQ(FlightEventJson(EventKey(7, 2, 0), DeleteOf15(), 7, FdelSource(), kShanghai),
            "{\"cause\":\"fdel\",\"changes\":{},\"event_key\":\"7:2:0\",\"flid\":\"15\","
            "\"flight\":{\"ACFT\":\"733\",\"FLID\":\"15\"},\"op\":\"DELETE\","
            "\"source\":{\"dttm\":\"2026-11-30T09:03:11+08:00\",\"mailbox_id\":4711,"
            "\"seqn\":\"1243\",\"styp\":\"FDEL\",\"type\":\"FLOP\"},\"version\":7}");
}

// events.flight-state = omit: the same event without the "flight" key, for
// a delete too (its cause stays).
TEST(EventPayloadTest, AnEventWithoutItsFlightLeavesOutTheKey) {
  const std::string rendered = "{\"ACFT\":\"733\",\"FLID\":\"15\"}";
  EXPECT_EQ(FlightEventJson(EventKey(7, 2, 0), DeleteOf15(), 7, FdelSource(), kShanghai, &rendered,
                            EventFlight::kOmitted),
            "{\"cause\":\"fdel\",\"changes\":{},\"event_key\":\"7:2:0\",\"flid\":\"15\","
            "\"op\":\"DELETE\","
            "\"source\":{\"dttm\":\"2026-11-30T09:03:11+08:00\",\"mailbox_id\":4711,"
            "\"seqn\":\"1243\",\"styp\":\"FDEL\",\"type\":\"FLOP\"},\"version\":7}");
}

TEST(EventPayloadTest, ReferenceChange) {
  ReferenceChange c;
  c.op = ChangeOp::kUpsert;
  c.type = "AIRL";
  c.key = "CA";
  c.record.type = "AIRL";
  c.record.key = "CA";
  c.record.data.fields["NAME"] = Value::Text("中国国际航空");
  FieldChange name;
  name.name = "NAME";
  name.after = Value::Text("中国国际航空");
  c.changes = {name};
  EventSource s = Source();
  s.type = "AIRL";
  s.styp = "ADD";
  EXPECT_EQ(ReferenceEventJson(EventKey(9, 0, 0), c, 9, s, kShanghai),
            "{\"changes\":{\"NAME\":{\"after\":\"中国国际航空\",\"before\":null}},"
            "\"event_key\":\"9:0:0\",\"key\":\"CA\",\"op\":\"UPSERT\","
            "\"record\":{\"fields\":{\"NAME\":\"中国国际航空\"},\"key\":\"CA\","
            "\"source\":\"AODB\",\"type\":\"AIRL\"},\"rtype\":\"AIRL\","
            "\"source\":{\"dttm\":\"2026-11-30T09:03:11+08:00\",\"mailbox_id\":4711,"
            "\"seqn\":\"1243\",\"styp\":\"ADD\",\"type\":\"AIRL\"},\"version\":9}");
}

}  // namespace
}  // namespace msgx
