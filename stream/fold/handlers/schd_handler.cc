// SCHD (daily schedule) and SCHS (seasonal schedule), docs/fold.md#schedules.
#include <algorithm>
#include <set>

#include "base/log.h"
#include "stream/fold/handlers/handlers.h"
#include "stream/fold/handlers/working_set.h"

namespace msgx {
namespace {

// The flight an FLTR describes, merged onto `base` (keep mode) or alone
// (clear mode). FLID is the key, never a field.
Flight FlightFromFltr(const sis::ScheduleRecord& r, const Flight* base, bool clear_missing) {
  Flight f;
  f.flid = r.flid.value;
  if (base && !clear_missing) f.data = base->data;
  Record carried;
  AddRecordChildren(r.fields, &carried, "FLID");
  for (auto& [n, v] : carried.fields) f.data.fields[n] = v;
  // A carried empty element clears the field.
  for (const sis::Element& e : r.fields) {
    if (e.name != "FLID" && e.children.empty() && e.attributes.empty() &&
        ElementValue(e).is_null()) {
      f.data.fields.erase(e.name);
    }
  }
  for (auto& [n, l] : carried.lists) f.data.lists[n] = l;
  return f;
}

Result<Decision> Snapshot(const StateView& view, const sis::DecodedMessage& msg,
                          const sis::ScheduleBody& body, const DecideContext& ctx) {
  Decision d;
  WorkingSet ws(view, &d, ctx.offset);
  const MicrosSinceEpoch day = StartOfAirportDay(ctx.now_micros, *ctx.zone);
  std::optional<MicrosSinceEpoch> min_sodt, max_sodt;
  std::set<std::string> named;
  for (const sis::ScheduleRecord& r : body.records) {
    named.insert(r.flid.value);
    if (r.sodt.has_value()) {
      min_sodt = std::min(min_sodt.value_or(r.sodt.utc_micros), r.sodt.utc_micros);
      max_sodt = std::max(max_sodt.value_or(r.sodt.utc_micros), r.sodt.utc_micros);
    }
  }
  if (max_sodt && *max_sodt < day) {
    d.state = OutcomeState::kSkipped;
    d.reason = "stale-snapshot";
    return d;
  }
  for (const sis::ScheduleRecord& r : body.records) {
    if (!r.missing_required.empty()) {
      std::string why = "missing";
      for (const std::string& m : r.missing_required) why += " " + m;
      d.skipped.push_back({r.index, r.flid.value, why});
      continue;
    }
    if (!r.sodt.has_value() || r.sodt.utc_micros < day) {
      d.skipped.push_back({r.index, r.flid.value, "sodt-before-day"});
      continue;
    }
    auto cur = ws.FindFlight(r.flid.value);
    if (!cur.ok()) return cur.status();
    auto put = ws.PutFlight(FlightFromFltr(r, *cur, ctx.snapshot_clear_missing));
    if (!put.ok()) return put.status();
  }
  if (max_sodt) {
    const MicrosSinceEpoch from = std::max(*min_sodt, day);
    auto in_window = ws.FlightsBySodt(from, *max_sodt);
    if (!in_window.ok()) return in_window.status();
    for (const std::string& flid : *in_window) {
      if (named.count(flid)) continue;
      auto del = ws.DeleteFlight(flid, "snapshot-window");
      if (!del.ok()) return del.status();
    }
  }
  d.new_generation = true;
  if (!d.skipped.empty()) {
    d.reason = "skipped " + std::to_string(d.skipped.size()) + " of " +
               std::to_string(body.records.size()) + " FLTR; first " + d.skipped.front().key +
               ": " + d.skipped.front().reason;
  }
  (void)msg;
  return d;
}

}  // namespace

Result<Decision> DecideSchd(const StateView& view, const sis::DecodedMessage& msg,
                            const DecideContext& ctx) {
  const auto& body = std::get<sis::ScheduleBody>(msg.body);
  const std::string& styp = msg.meta.styp;
  if (sis::IsSnapshotStyp(styp)) return Snapshot(view, msg, body, ctx);
  Decision d;
  WorkingSet ws(view, &d, ctx.offset);
  for (const sis::ScheduleRecord& r : body.records) {
    if (styp == "DEL") {
      auto del = ws.DeleteFlight(r.flid.value, "schd-del");
      if (!del.ok()) return del.status();
      if (!*del) d.skipped.push_back({r.index, r.flid.value, "unknown-flight"});
      continue;
    }
    auto cur = ws.FindFlight(r.flid.value);
    if (!cur.ok()) return cur.status();
    // Creating a flight needs the required fields; updating one does not.
    if (!*cur && !r.missing_required.empty()) {
      std::string why = "missing";
      for (const std::string& m : r.missing_required) why += " " + m;
      d.skipped.push_back({r.index, r.flid.value, why});
      continue;
    }
    auto put = ws.PutFlight(FlightFromFltr(r, *cur, false));
    if (!put.ok()) return put.status();
  }
  if (!d.skipped.empty()) {
    d.reason = "skipped " + std::to_string(d.skipped.size()) + " of " +
               std::to_string(body.records.size()) + " FLTR; first " + d.skipped.front().key +
               ": " + d.skipped.front().reason;
  }
  return d;
}

// A season is stored as reference type "SCHS", key "<SDAT>-<EDAT>" (airport
// dates, yyyyMMdd), its FLTRs as the list "FLTR".
Result<Decision> DecideSchs(const StateView& view, const sis::DecodedMessage& msg,
                            const DecideContext& ctx) {
  const auto& body = std::get<sis::ScheduleBody>(msg.body);
  if (!body.sdat.has_value() || !body.edat.has_value()) {
    return Status::Malformed("SCHS without SDAT/EDAT");
  }
  Decision d;
  WorkingSet ws(view, &d, ctx.offset);
  ReferenceRecord season;
  season.type = "SCHS";
  season.key = AirportDate(body.sdat.utc_micros, *ctx.zone) + "-" +
               AirportDate(body.edat.utc_micros, *ctx.zone);
  SetField(&season.data, "SNAM", body.snam.has_value() ? Value::Text(body.snam.value) : Value{});
  SetField(&season.data, "APCD", body.apcd.has_value() ? Value::Text(body.apcd.value) : Value{});
  SetField(&season.data, "SDAT", Value::Time(body.sdat.utc_micros));
  SetField(&season.data, "EDAT", Value::Time(body.edat.utc_micros));
  Entries fltrs;
  for (const sis::ScheduleRecord& r : body.records) {
    sis::Element e;
    e.name = "FLTR";
    e.attributes = r.attributes;
    e.children = r.fields;
    fltrs.push_back(EntryFields(e));
  }
  if (!fltrs.empty()) season.data.lists["FLTR"] = std::move(fltrs);
  auto keys = ws.ReferenceKeys("SCHS");
  if (!keys.ok()) return keys.status();
  // Keep the latest other season: greatest SDAT (the key starts with it,
  // yyyyMMdd, so the greatest key is the latest start, then end).
  std::string keep;
  for (const std::string& k : *keys) {
    if (k != season.key) keep = std::max(keep, k);
  }
  const std::string new_key = season.key;
  auto put = ws.PutReference(std::move(season));
  if (!put.ok()) return put.status();
  for (const std::string& k : *keys) {
    if (k == keep || k == new_key) continue;
    auto del = ws.DeleteReference("SCHS", k);
    if (!del.ok()) return del.status();
  }
  return d;
}

}  // namespace msgx
