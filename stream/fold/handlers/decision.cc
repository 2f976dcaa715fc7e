#include "stream/fold/handlers/decision.h"

#include <algorithm>

namespace msgx {
namespace {

void AppendChanges(const std::vector<FieldChange>& cs, const AirportZone& zone, std::string* out) {
  out->push_back('[');
  for (std::size_t i = 0; i < cs.size(); ++i) {
    const FieldChange& c = cs[i];
    if (i) out->push_back(',');
    out->push_back('[');
    AppendJsonString(c.name, out);
    out->push_back(',');
    if (c.is_list) {
      AppendListJson(c.list_before, zone, out);
      out->push_back(',');
      AppendListJson(c.list_after, zone, out);
    } else {
      AppendValueJson(c.before, zone, out);
      out->push_back(',');
      AppendValueJson(c.after, zone, out);
    }
    out->push_back(']');
  }
  out->push_back(']');
}

void AppendRejections(const std::vector<Rejection>& rs, std::string* out) {
  out->push_back('[');
  for (std::size_t i = 0; i < rs.size(); ++i) {
    if (i) out->push_back(',');
    out->append(std::to_string(rs[i].record_index));
    out->push_back(',');
    AppendJsonString(rs[i].key, out);
    out->push_back(',');
    AppendJsonString(rs[i].reason, out);
  }
  out->push_back(']');
}

}  // namespace

std::string_view ChangeOpName(ChangeOp op) { return op == ChangeOp::kUpsert ? "UPSERT" : "DELETE"; }

std::vector<FieldChange> DiffRecords(const Record& before, const Record& after) {
  std::vector<FieldChange> out;
  // Fields: merge the two sorted maps.
  auto b = before.fields.begin();
  auto a = after.fields.begin();
  while (b != before.fields.end() || a != after.fields.end()) {
    if (a == after.fields.end() || (b != before.fields.end() && b->first < a->first)) {
      if (!b->second.is_null()) out.push_back({b->first, false, b->second, Value::Null(), {}, {}});
      ++b;
    } else if (b == before.fields.end() || a->first < b->first) {
      if (!a->second.is_null()) out.push_back({a->first, false, Value::Null(), a->second, {}, {}});
      ++a;
    } else {
      if (!(a->second == b->second)) out.push_back({a->first, false, b->second, a->second, {}, {}});
      ++a;
      ++b;
    }
  }
  auto lb = before.lists.begin();
  auto la = after.lists.begin();
  while (lb != before.lists.end() || la != after.lists.end()) {
    if (la == after.lists.end() || (lb != before.lists.end() && lb->first < la->first)) {
      if (!lb->second.empty()) out.push_back({lb->first, true, {}, {}, lb->second, {}});
      ++lb;
    } else if (lb == before.lists.end() || la->first < lb->first) {
      if (!la->second.empty()) out.push_back({la->first, true, {}, {}, {}, la->second});
      ++la;
    } else {
      if (la->second != lb->second) {
        out.push_back({la->first, true, {}, {}, lb->second, la->second});
      }
      ++la;
      ++lb;
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const FieldChange& x, const FieldChange& y) { return x.name < y.name; });
  return out;
}

std::vector<EventRef> Events(const Decision& d) {
  std::vector<EventRef> out;
  out.reserve(d.flights.size() + d.references.size());
  for (std::size_t i = 0; i < d.flights.size(); ++i) out.push_back({true, i, out.size()});
  for (std::size_t i = 0; i < d.references.size(); ++i) out.push_back({false, i, out.size()});
  return out;
}

void AppendDecisionCanonical(const Decision& d, const AirportZone& zone, std::string* out) {
  out->append("{\"state\":");
  AppendJsonString(OutcomeStateName(d.state), out);
  out->append(",\"reason\":");
  AppendJsonString(d.reason, out);
  out->append(",\"gen\":");
  out->append(d.new_generation ? "1" : "0");
  out->append(",\"rejected\":");
  AppendRejections(d.rejected, out);
  out->append(",\"skipped\":");
  AppendRejections(d.skipped, out);
  out->append(",\"flights\":[");
  for (std::size_t i = 0; i < d.flights.size(); ++i) {
    const FlightChange& c = d.flights[i];
    if (i) out->push_back(',');
    out->push_back('[');
    AppendJsonString(ChangeOpName(c.op), out);
    out->push_back(',');
    AppendJsonString(c.flid, out);
    out->push_back(',');
    AppendJsonString(c.cause, out);
    out->push_back(',');
    AppendChanges(c.changes, zone, out);
    out->push_back(']');
  }
  out->append("],\"refs\":[");
  for (std::size_t i = 0; i < d.references.size(); ++i) {
    const ReferenceChange& c = d.references[i];
    if (i) out->push_back(',');
    out->push_back('[');
    AppendJsonString(ChangeOpName(c.op), out);
    out->push_back(',');
    AppendJsonString(c.type, out);
    out->push_back(',');
    AppendJsonString(c.key, out);
    out->push_back(',');
    AppendChanges(c.changes, zone, out);
    out->push_back(']');
  }
  out->append("]}");
}

}  // namespace msgx
