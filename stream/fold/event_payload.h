// Event payloads of the outbox (docs/dispatch.md#event-payloads), as canonical
// JSON: the same Decision renders to the same bytes, always. Object keys are
// sorted at every level, times are ISO-8601 with the airport's offset, numbers
// are integers. The payload carries its `event_key`, never the BIGSERIAL
// event_id (which differs between a database and its restore).
//
// KAFKA:msg, one per flight change:
//   {"cause":"fdel"                       (DELETE only)
//    "changes":{"STND":{"after":"504","before":null},
//               "GTDT":{"after":[{…}],"before":[]}, …},
//    "event_key":"<offset>:<sub>:<position>",
//    "flid":"…",
//    "flight":{…full state after; for DELETE the last state…}
//             (left out, key and all, under events.flight-state = omit),
//    "op":"UPSERT"|"DELETE",
//    "source":{"dttm":"2026-11-30T09:03:11+08:00","mailbox_id":4711,
//              "seqn":"1243","styp":"STND","type":"FLOP"},
//    "version":<log offset of the change>}
// KAFKA:ref, one per reference change: the same, with "key", "rtype" and
// "record" instead of "flid" and "flight".
//
// Pure and thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "state/airport_zone.h"
#include "stream/fold/handlers/decision.h"

namespace msgx {

// The SIS message an event came from.
struct EventSource {
  std::int64_t mailbox_id = 0;
  std::string type;
  std::string styp;
  std::string seqn;
  MicrosSinceEpoch dttm_micros = 0;
};

// "<offset>:<sub>:<position>" (stream/fold/handlers/decision.h, Events()).
std::string EventKey(std::int64_t offset, int sub, std::size_t position);

// Whether a KAFKA:msg event carries its flight's state (events.flight-state,
// a decision setting: docs/dispatch.md#event-payloads).
enum class EventFlight { kFull, kOmitted };

// `flight_json`, when given, is FlightJson(*change.flight, zone), which the
// caller already rendered (unused when `flight` is kOmitted).
std::string FlightEventJson(const std::string& event_key, const FlightChange& change,
                            std::int64_t version, const EventSource& source,
                            const AirportZone& zone, const std::string* flight_json = nullptr,
                            EventFlight flight = EventFlight::kFull);

std::string ReferenceEventJson(const std::string& event_key, const ReferenceChange& change,
                               std::int64_t version, const EventSource& source,
                               const AirportZone& zone);

}  // namespace msgx
