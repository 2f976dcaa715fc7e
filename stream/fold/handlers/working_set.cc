#include "stream/fold/handlers/working_set.h"

#include <set>

namespace msgx {

Result<const Flight*> WorkingSet::FindFlight(const std::string& flid) {
  auto it = flights_.find(flid);
  if (it == flights_.end()) {
    auto base = view_.FindFlight(flid);
    if (!base.ok()) return base.status();
    it = flights_.emplace(flid, std::move(base).value()).first;
  }
  return it->second.get();
}

Result<std::optional<Flight>> WorkingSet::GetFlight(const std::string& flid) {
  auto f = FindFlight(flid);
  if (!f.ok()) return f.status();
  if (!*f) return std::optional<Flight>();
  return std::optional<Flight>(**f);
}

Result<std::vector<std::string>> WorkingSet::FlightsBySodt(MicrosSinceEpoch from,
                                                           MicrosSinceEpoch to) {
  auto base = view_.FlightsBySodt(from, to);
  if (!base.ok()) return base.status();
  std::set<std::string> out;
  for (std::string& f : *base) {
    if (!flights_.count(f)) out.insert(std::move(f));
  }
  for (const auto& [flid, f] : flights_) {
    if (!f) continue;
    auto sodt = f->Sodt();
    if (sodt && *sodt >= from && *sodt <= to) out.insert(flid);
  }
  return std::vector<std::string>(out.begin(), out.end());
}

Result<bool> WorkingSet::PutFlight(Flight after) {
  auto before = FindFlight(after.flid);
  if (!before.ok()) return before.status();
  static const Record kEmpty;
  const Record& b = *before ? (*before)->data : kEmpty;
  std::vector<FieldChange> changes = DiffRecords(b, after.data);
  if (changes.empty() && *before) return false;
  after.version = offset_;
  FlightChange c;
  c.op = ChangeOp::kUpsert;
  c.flid = after.flid;
  c.created = *before == nullptr;
  c.changes = std::move(changes);
  std::string flid = after.flid;
  c.flight = std::make_shared<const Flight>(std::move(after));
  flights_[flid] = c.flight;
  decision_->flights.push_back(std::move(c));
  return true;
}

Result<bool> WorkingSet::DeleteFlight(const std::string& flid, const std::string& cause) {
  auto before = FindFlight(flid);
  if (!before.ok()) return before.status();
  if (!*before) return false;
  FlightChange c;
  c.op = ChangeOp::kDelete;
  c.flid = flid;
  c.changes = DiffRecords((*before)->data, Record{});
  c.flight = flights_[flid];
  c.cause = cause;
  decision_->flights.push_back(std::move(c));
  flights_[flid] = nullptr;
  return true;
}

Result<std::optional<ReferenceRecord>> WorkingSet::GetReference(const std::string& type,
                                                                const std::string& key) {
  if (auto it = refs_.find({type, key}); it != refs_.end()) return it->second;
  return view_.GetReference(type, key);
}

Result<std::vector<std::string>> WorkingSet::ReferenceKeys(const std::string& type) {
  auto base = view_.ReferenceKeys(type);
  if (!base.ok()) return base.status();
  std::set<std::string> out(base->begin(), base->end());
  for (auto it = refs_.lower_bound({type, std::string()});
       it != refs_.end() && it->first.first == type; ++it) {
    if (it->second) {
      out.insert(it->first.second);
    } else {
      out.erase(it->first.second);
    }
  }
  return std::vector<std::string>(out.begin(), out.end());
}

Result<bool> WorkingSet::PutReference(ReferenceRecord after) {
  auto before = GetReference(after.type, after.key);
  if (!before.ok()) return before.status();
  static const Record kEmpty;
  const Record& b = *before ? (*before)->data : kEmpty;
  std::vector<FieldChange> changes = DiffRecords(b, after.data);
  if (changes.empty() && before->has_value() && (*before)->source == after.source) return false;
  after.version = offset_;
  ReferenceChange c;
  c.op = ChangeOp::kUpsert;
  c.type = after.type;
  c.key = after.key;
  c.changes = std::move(changes);
  c.record = after;
  decision_->references.push_back(std::move(c));
  refs_[{after.type, after.key}] = std::move(after);
  return true;
}

Result<bool> WorkingSet::DeleteReference(const std::string& type, const std::string& key) {
  auto before = GetReference(type, key);
  if (!before.ok()) return before.status();
  if (!before->has_value()) return false;
  ReferenceChange c;
  c.op = ChangeOp::kDelete;
  c.type = type;
  c.key = key;
  c.changes = DiffRecords((*before)->data, Record{});
  c.record = std::move(**before);
  decision_->references.push_back(std::move(c));
  refs_[{type, key}] = std::nullopt;
  return true;
}

Value ElementValue(const sis::Element& e) {
  if (e.time.state == sis::TimeState::kValue) {
    if (e.time.format == sis::TimeFormat::kHhmm) return Value::Int(e.time.minutes);
    return Value::Time(e.time.utc_micros);
  }
  if (e.text.empty()) return Value::Null();
  // The integer fields (MAXP, HNAG parts; docs/fold.md#flop-updates) are
  // integers wherever they come from, so a FLTR and a FLOP carrying the same
  // value agree.
  if (e.name == "MAXP" || e.name == "FHAG" || e.name == "PHAG" || e.name == "MHAG") {
    const bool digits =
        e.text.size() < 19 && e.text.find_first_not_of("0123456789") == std::string::npos;
    if (digits) return Value::Int(std::stoll(e.text));
  }
  return Value::Text(e.text);
}

namespace {

void PutUnique(Fields* f, const std::string& name, Value v) {
  if (!f->count(name)) {
    f->emplace(name, std::move(v));
    return;
  }
  for (int i = 2;; ++i) {
    std::string n = name + "#" + std::to_string(i);
    if (!f->count(n)) {
      f->emplace(std::move(n), std::move(v));
      return;
    }
  }
}

void AddChildren(const sis::Element& e, const std::string& prefix, Fields* f) {
  for (const sis::Element& c : e.children) {
    const std::string name = prefix.empty() ? c.name : prefix + "." + c.name;
    if (c.children.empty()) {
      PutUnique(f, name, ElementValue(c));
    } else {
      AddChildren(c, name, f);
    }
  }
}

}  // namespace

Fields EntryFields(const sis::Element& e) {
  Fields f;
  for (const sis::Attribute& a : e.attributes) {
    PutUnique(&f, a.name, a.value.empty() ? Value::Null() : Value::Text(a.value));
  }
  if (!e.text.empty() && !e.children.empty()) PutUnique(&f, "TEXT", Value::Text(e.text));
  if (e.children.empty() && !e.text.empty()) PutUnique(&f, "TEXT", ElementValue(e));
  AddChildren(e, "", &f);
  return f;
}

void SetField(Record* rec, const std::string& name, Value v) {
  if (v.is_null()) {
    rec->fields.erase(name);
  } else {
    rec->fields[name] = std::move(v);
  }
}

void AddRecordChildren(const std::vector<sis::Element>& children, Record* rec,
                       std::string_view skip1, std::string_view skip2) {
  std::map<std::string, Entries, std::less<>> lists;
  for (const sis::Element& c : children) {
    if (c.name == skip1 || c.name == skip2) continue;
    if (c.children.empty() && c.attributes.empty()) {
      SetField(rec, c.name, ElementValue(c));
    } else {
      lists[c.name].push_back(EntryFields(c));
    }
  }
  for (auto& [name, entries] : lists) rec->lists[name] = std::move(entries);
}

}  // namespace msgx
