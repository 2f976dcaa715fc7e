#include "stream/fold/event_payload.h"

namespace msgx {
namespace {

// {"NAME":{"after":…,"before":…},…}; FieldChanges come sorted by name.
void AppendChanges(const std::vector<FieldChange>& changes, const AirportZone& zone,
                   std::string* out) {
  out->push_back('{');
  for (std::size_t i = 0; i < changes.size(); ++i) {
    const FieldChange& c = changes[i];
    if (i > 0) out->push_back(',');
    AppendJsonString(c.name, out);
    out->append(":{\"after\":");
    if (c.is_list) {
      AppendListJson(c.list_after, zone, out);
    } else {
      AppendValueJson(c.after, zone, out);
    }
    out->append(",\"before\":");
    if (c.is_list) {
      AppendListJson(c.list_before, zone, out);
    } else {
      AppendValueJson(c.before, zone, out);
    }
    out->push_back('}');
  }
  out->push_back('}');
}

void AppendSource(const EventSource& s, const AirportZone& zone, std::string* out) {
  out->append("{\"dttm\":");
  AppendJsonString(FormatAirportIso8601(s.dttm_micros, zone), out);
  out->append(",\"mailbox_id\":");
  out->append(std::to_string(s.mailbox_id));
  out->append(",\"seqn\":");
  AppendJsonString(s.seqn, out);
  out->append(",\"styp\":");
  AppendJsonString(s.styp, out);
  out->append(",\"type\":");
  AppendJsonString(s.type, out);
  out->push_back('}');
}

}  // namespace

std::string EventKey(std::int64_t offset, int sub, std::size_t position) {
  return std::to_string(offset) + ":" + std::to_string(sub) + ":" + std::to_string(position);
}

std::string FlightEventJson(const std::string& event_key, const FlightChange& change,
                            std::int64_t version, const EventSource& source,
                            const AirportZone& zone, const std::string* flight_json,
                            EventFlight flight) {
  std::string out;
  // The flight, and room for the changes and the source around it: one
  // allocation instead of a string grown by doubling.
  out.reserve((flight_json != nullptr ? flight_json->size() : 0) + 512);
  out.push_back('{');
  if (change.op == ChangeOp::kDelete) {
    out.append("\"cause\":");
    AppendJsonString(change.cause, &out);
    out.push_back(',');
  }
  out.append("\"changes\":");
  AppendChanges(change.changes, zone, &out);
  out.append(",\"event_key\":");
  AppendJsonString(event_key, &out);
  out.append(",\"flid\":");
  AppendJsonString(change.flid, &out);
  if (flight == EventFlight::kFull) {
    out.append(",\"flight\":");
    if (change.flight && flight_json) {
      out.append(*flight_json);
    } else if (change.flight) {
      out.append(FlightJson(*change.flight, zone));
    } else {
      out.append("null");
    }
  }
  out.append(",\"op\":");
  AppendJsonString(ChangeOpName(change.op), &out);
  out.append(",\"source\":");
  AppendSource(source, zone, &out);
  out.append(",\"version\":");
  out.append(std::to_string(version));
  out.push_back('}');
  return out;
}

std::string ReferenceEventJson(const std::string& event_key, const ReferenceChange& change,
                               std::int64_t version, const EventSource& source,
                               const AirportZone& zone) {
  std::string out = "{\"changes\":";
  AppendChanges(change.changes, zone, &out);
  out.append(",\"event_key\":");
  AppendJsonString(event_key, &out);
  out.append(",\"key\":");
  AppendJsonString(change.key, &out);
  out.append(",\"op\":");
  AppendJsonString(ChangeOpName(change.op), &out);
  out.append(",\"record\":");
  out.append(ReferenceJson(change.record, zone));
  out.append(",\"rtype\":");
  AppendJsonString(change.type, &out);
  out.append(",\"source\":");
  AppendSource(source, zone, &out);
  out.append(",\"version\":");
  out.append(std::to_string(version));
  out.push_back('}');
  return out;
}

}  // namespace msgx
