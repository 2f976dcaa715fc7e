#include "stream/fold/pending_builder.h"

namespace msgx {
namespace {

std::string FieldText(const Record& r, std::string_view name) {
  auto it = r.fields.find(name);
  if (it == r.fields.end() || it->second.kind != Value::Kind::kText) return {};
  return it->second.text;
}

}  // namespace

void PendingBuilder::AddEvents(std::int64_t offset, int sub, const Decision& d,
                               const EventSource& source, std::string_view flight_target,
                               MicrosSinceEpoch now) {
  for (const EventRef& e : Events(d)) {
    EventRow row;
    row.event_key = EventKey(offset, sub, e.position);
    row.state_version = offset;
    row.source_msg_id = source.mailbox_id;
    row.created_micros = now;
    if (e.is_flight) {
      const FlightChange& c = d.flights[e.index];
      row.target = std::string(flight_target);
      row.partition_key = c.flid;
      row.event_type = std::string(ChangeOpName(c.op));
      // A schedule push is the latest event per flight (docs/dispatch.md),
      // so its events keep their flight whatever the setting.
      if (event_flight_ == EventFlight::kOmitted && flight_target == kTargetMsg) {
        row.payload_json =
            FlightEventJson(row.event_key, c, offset, source, *zone_, nullptr, event_flight_);
      } else if (c.flight) {
        std::string json = FlightJson(*c.flight, *zone_);
        row.payload_json = FlightEventJson(row.event_key, c, offset, source, *zone_, &json);
        rendered_[c.flid] = {c.flight, std::move(json)};
      } else {
        row.payload_json = FlightEventJson(row.event_key, c, offset, source, *zone_);
      }
    } else {
      const ReferenceChange& c = d.references[e.index];
      row.target = std::string(kTargetRef);
      row.partition_key = c.type + "|" + c.key;
      row.event_type = std::string(ChangeOpName(c.op));
      row.payload_json = ReferenceEventJson(row.event_key, c, offset, source, *zone_);
      ref_times_[{c.type, c.key}] = now;
    }
    events_.push_back(std::move(row));
  }
}

void PendingBuilder::AddMessage(std::int64_t offset, int sub, const Outcome& outcome,
                                const Decision& decision, const EventSource& source,
                                const MessageTimes& times, MicrosSinceEpoch now) {
  times_[outcome.mailbox_id] = times;
  const bool schedule = source.type == "SCHD" || source.type == "SCHS";
  AddEvents(offset, sub, decision, source, schedule ? kTargetSchd : kTargetMsg, now);
}

void PendingBuilder::AddSweep(std::int64_t offset, const Decision& decision, MicrosSinceEpoch now) {
  EventSource none;
  AddEvents(offset, 0, decision, none, kTargetMsg, now);
  for (const FlightChange& c : decision.flights) {
    HistoryRow h;
    h.flid = c.flid;
    h.state_version = offset;
    // Cut to flight_hst's columns (docs/schema.md#bounded-values).
    h.alcd = BoundUtf8(FieldText(c.flight->data, "ALCD"), kMaxHistoryAlcd);
    h.flno = BoundUtf8(FieldText(c.flight->data, "FLNO"), kMaxHistoryFlno);
    h.mvin = BoundUtf8(FieldText(c.flight->data, "MVIN"), kMaxHistoryMvin);
    h.sodt = c.flight->Sodt();
    h.payload_json = FlightJson(*c.flight, *zone_);
    h.swept_micros = now;
    history_.push_back(std::move(h));
  }
}

PendingBatch PendingBuilder::Finish(const BatchWrite& write, std::int64_t first_offset,
                                    MicrosSinceEpoch last_append_micros) {
  PendingBatch p;
  p.first_offset = first_offset;
  p.last_offset = write.meta.applied_offset;
  p.fold_version = write.meta.fold_version;
  p.generation = write.meta.generation;
  p.digest = write.meta.digest;
  p.last_append_micros = last_append_micros;
  p.outcomes.reserve(write.outcomes.size());
  for (const auto& [id, o] : write.outcomes) {
    OutcomeRow row{o, 0, 0};
    if (auto it = times_.find(id); it != times_.end()) {
      row.received_micros = it->second.received_micros;
      row.enqueued_micros = it->second.enqueued_micros;
    }
    p.outcomes.push_back(std::move(row));
  }
  for (const auto& [key, rec] : write.references) {
    ReferenceRow row;
    row.rtype = key.first;
    row.rkey = key.second;
    auto t = ref_times_.find(key);
    row.refreshed_micros = t != ref_times_.end() ? t->second : last_append_micros;
    if (rec) {
      row.payload_json = ReferenceJson(*rec, *zone_);
      row.source = rec->source;
      row.state_version = rec->version;
    } else {
      row.deleted = true;
      row.state_version = p.last_offset;
    }
    p.references.push_back(std::move(row));
  }
  p.flights.reserve(write.flights.size());
  for (const auto& [flid, f] : write.flights) {
    FlightRow row{flid, std::nullopt};
    if (auto r = rendered_.find(flid); f && r != rendered_.end() && r->second.flight == f) {
      row.json = std::move(r->second.json);
    } else if (f) {
      row.json = FlightJson(*f, *zone_);
    }
    p.flights.push_back(std::move(row));
  }
  p.events = std::move(events_);
  p.history = std::move(history_);
  Clear();
  return p;
}

void PendingBuilder::Clear() {
  events_.clear();
  history_.clear();
  times_.clear();
  ref_times_.clear();
  rendered_.clear();
}

}  // namespace msgx
