// FLOP: operational updates of existing flights (docs/fold.md#flop-updates).
// Field naming in state: the STYP's own element names (docs/fold.md).
#include <algorithm>
#include <set>
#include <variant>

#include "stream/fold/handlers/handlers.h"
#include "stream/fold/handlers/working_set.h"

namespace msgx {
namespace {

using sis::Presence;

// What one record does to one flight: a new Record, or a rejection reason.
struct Applied {
  bool rejected = false;
  std::string reason;
  bool delete_flight = false;
};

Applied Reject(std::string reason) { return {true, std::move(reason), false}; }

Value TextOrNull(const sis::TextField& t) {
  return t.has_value() ? Value::Text(t.value) : Value::Null();
}

Value TimeOrNull(const sis::TimeField& t) {
  if (t.state != sis::TimeState::kValue) return Value::Null();
  if (t.format == sis::TimeFormat::kHhmm) return Value::Int(t.minutes);
  return Value::Time(t.utc_micros);
}

// Sort key for list entries keyed by a sequence: numbers numerically, then
// text byte-wise.
bool SeqLess(const std::string& a, const std::string& b) {
  auto numeric = [](const std::string& s) {
    return !s.empty() && s.size() < 19 &&
           std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
  };
  const bool na = numeric(a), nb = numeric(b);
  if (na && nb) return std::stoll(a) < std::stoll(b);
  if (na != nb) return na;
  return a < b;
}

std::string KeyOf(const Fields& f, const std::string& key_name) {
  auto it = f.find(key_name);
  if (it == f.end() || it->second.kind != Value::Kind::kText) return {};
  return it->second.text;
}

// Entries of a list payload as field maps, later duplicates of a key
// replacing earlier ones, sorted by key.
Entries ReplaceEntries(const sis::ListPayload& p) {
  std::map<std::string, Fields, bool (*)(const std::string&, const std::string&)> by_key(SeqLess);
  for (const sis::ListEntry& e : p.entries) {
    if (e.element.IsBlank()) continue;
    by_key[e.key.value] = EntryFields(e.element);
  }
  Entries out;
  for (auto& [k, f] : by_key) out.push_back(std::move(f));
  return out;
}

// Upsert `entry` into `list` by key: replace in place, or append.
void UpsertEntry(Entries* list, const std::string& key_name, Fields entry) {
  const std::string key = KeyOf(entry, key_name);
  for (Fields& e : *list) {
    if (KeyOf(e, key_name) == key) {
      e = std::move(entry);
      return;
    }
  }
  list->push_back(std::move(entry));
}

void SetList(Record* r, const std::string& name, Entries e) {
  if (e.empty()) {
    r->lists.erase(name);
  } else {
    r->lists[name] = std::move(e);
  }
}

Applied ApplyList(const std::string& styp, const sis::ListPayload& p, Record* r) {
  static const std::set<std::string, std::less<>> kReplace = {"GTDT", "PSDT", "CLDT",
                                                              "CHDT", "CHOT", "ABTM"};
  if (kReplace.count(styp)) {
    if (p.all_blank) return Reject("empty " + styp);
    SetList(r, styp, ReplaceEntries(p));
    return {};
  }
  if (styp == "CKDT") {
    SetList(r, styp, ReplaceEntries(p));
    return {};
  }
  if (styp == "ERUT" || styp == "SRVT") {
    if (p.all_blank) {
      SetList(r, styp, {});
      return {};
    }
    Entries list = r->lists.count(styp) ? r->lists[styp].get() : Entries{};
    for (const sis::ListEntry& e : p.entries) {
      if (!e.key.has_value()) return Reject(styp + " entry without " + p.key_name);
    }
    for (const sis::ListEntry& e : p.entries)
      UpsertEntry(&list, p.key_name, EntryFields(e.element));
    SetList(r, styp, std::move(list));
    return {};
  }
  if (styp == "VIPF") {
    Entries list = r->lists.count(styp) ? r->lists[styp].get() : Entries{};
    for (const sis::ListEntry& e : p.entries) {
      if (!e.key.has_value()) return Reject("VIPF entry without VPCD");
    }
    if (p.entries.empty()) return Reject("empty VIPF");
    for (const sis::ListEntry& e : p.entries)
      UpsertEntry(&list, p.key_name, EntryFields(e.element));
    SetList(r, styp, std::move(list));
    return {};
  }
  if (styp == "PSHT" || styp == "TIPT") {
    // Patch the stand (PSDT) entry whose stand code PSST equals PUST/TRST.
    if (p.entries.empty()) return Reject("empty " + styp);
    auto it = r->lists.find("PSDT");
    for (const sis::ListEntry& e : p.entries) {
      const std::string code_name = styp == "PSHT" ? "PUST" : "TRST";
      const sis::TextField code = e.element.ChildText(code_name);
      if (!code.has_value()) {
        std::string why = styp;
        why.append(" without ").append(code_name);
        return Reject(std::move(why));
      }
      if (it == r->lists.end()) return Reject("no stand entry " + code.value);
      // Found in the shared list first: it is copied (Mutable) only to be
      // patched, not for a stand it does not hold.
      const Entries& stands = it->second.get();
      const auto found = std::find_if(stands.begin(), stands.end(), [&](const Fields& s) {
        return KeyOf(s, "PSST") == code.value;
      });
      if (found == stands.end()) return Reject("no stand entry " + code.value);
      const auto at = static_cast<std::size_t>(found - stands.begin());
      Fields& target = it->second.Mutable()[at];
      Fields patch = EntryFields(e.element);
      patch.erase(code_name);
      for (auto& [n, v] : patch) target[n] = v;
    }
    return {};
  }
  return Reject("no list rule for " + styp);
}

Applied ApplyPayload(const std::string& styp, const sis::FlopRecord& rec, Record* r) {
  return std::visit(
      [&](const auto& p) -> Applied {
        using T = std::decay_t<decltype(p)>;
        if constexpr (std::is_same_v<T, sis::TextPayload> || std::is_same_v<T, sis::CharPayload>) {
          if (p.value.blank()) return Reject("empty " + styp);
          SetField(r, styp, Value::Text(p.value.value));
        } else if constexpr (std::is_same_v<T, sis::TimePayload>) {
          if (p.value.state == sis::TimeState::kUnparsable) {
            return Reject("unparsable " + styp + " '" + p.value.raw + "'");
          }
          SetField(r, styp, TimeOrNull(p.value));
        } else if constexpr (std::is_same_v<T, sis::IntPayload>) {
          if (!p.value.has_value()) return Reject("empty " + styp);
          SetField(r, styp, Value::Int(p.value.value));
        } else if constexpr (std::is_same_v<T, sis::HnagPayload>) {
          auto one = [&](const char* name, const sis::IntField& f) {
            if (f.presence == Presence::kMissing) return;  // not carried: kept
            SetField(r, name, f.has_value() ? Value::Int(f.value) : Value::Null());
          };
          one("FHAG", p.fhag);
          one("PHAG", p.phag);
          one("MHAG", p.mhag);
        } else if constexpr (std::is_same_v<T, sis::VippPayload>) {
          if (p.vipp.presence != Presence::kMissing) SetField(r, "VIPP", TextOrNull(p.vipp));
          if (p.vipr.presence != Presence::kMissing) SetField(r, "VIPR", TextOrNull(p.vipr));
        } else if constexpr (std::is_same_v<T, sis::TaopPayload>) {
          const bool clear = p.taop.blank() || p.tafl.blank() || p.taid.blank();
          SetField(r, "TAOP", clear ? Value::Null() : TextOrNull(p.taop));
          SetField(r, "TAFL", clear ? Value::Null() : TextOrNull(p.tafl));
          SetField(r, "TAID", clear ? Value::Null() : TextOrNull(p.taid));
        } else if constexpr (std::is_same_v<T, sis::ExssPayload>) {
          if (p.exsc.presence == Presence::kMissing) return Reject("EXSS without EXSC");
          SetField(r, "EXSC", TextOrNull(p.exsc));
          SetField(r, "EXSR", TextOrNull(p.exsr));
        } else if constexpr (std::is_same_v<T, sis::FdivPayload>) {
          const bool clear = p.element != Presence::kValue || p.ddes.blank();
          if (!clear && p.ddir.value != "TO" && p.ddir.value != "FROM") {
            return Reject("bad DDIR '" + p.ddir.value + "'");
          }
          SetField(r, "FDIV", clear ? Value::Null() : TextOrNull(p.reason));
          SetField(r, "DDES", clear ? Value::Null() : TextOrNull(p.ddes));
          SetField(r, "DDIR", clear ? Value::Null() : TextOrNull(p.ddir));
        } else if constexpr (std::is_same_v<T, sis::FretPayload>) {
          const bool clear = p.element != Presence::kValue;
          if (!clear && p.reid.value != "A" && p.reid.value != "G") {
            return Reject("bad REID '" + p.reid.value + "'");
          }
          SetField(r, "FRET", clear ? Value::Null() : TextOrNull(p.reason));
          SetField(r, "REID", clear ? Value::Null() : TextOrNull(p.reid));
        } else if constexpr (std::is_same_v<T, sis::FlabPayload>) {
          const bool clear = p.element != Presence::kValue;
          if (!clear && p.ares.value != "O" && p.ares.value != "G") {
            return Reject("bad ARES '" + p.ares.value + "'");
          }
          SetField(r, "FLAB", clear ? Value::Null() : TextOrNull(p.reason));
          SetField(r, "ARES", clear ? Value::Null() : TextOrNull(p.ares));
        } else if constexpr (std::is_same_v<T, sis::PortPayload>) {
          if (p.poid.presence == Presence::kMissing) return Reject("PORT without POID");
          if (p.poid.has_value() && p.poid.value != "O" && p.poid.value != "C") {
            return Reject("bad POID '" + p.poid.value + "'");
          }
          SetField(r, "POTM", TimeOrNull(p.potm));
          SetField(r, "POID", TextOrNull(p.poid));
        } else if constexpr (std::is_same_v<T, sis::ListPayload>) {
          return ApplyList(styp, p, r);
        } else if constexpr (std::is_same_v<T, sis::DelyPayload>) {
          if (p.delete_all) {
            SetList(r, "DELY", {});
            return {};
          }
          if (p.entries.empty()) return Reject("empty DELY");
          Entries list = r->lists.count("DELY") ? r->lists["DELY"].get() : Entries{};
          for (const sis::DelayEntry& d : p.entries) {
            if (!d.code.has_value()) return Reject("DELY without CODE");
          }
          for (const sis::DelayEntry& d : p.entries) {
            Fields f;
            f["CODE"] = Value::Text(d.code.value);
            if (!d.strt.blank()) f["STRT"] = TimeOrNull(d.strt);
            if (!d.dura.blank()) f["DURA"] = TimeOrNull(d.dura);
            if (d.comment.has_value()) f["TEXT"] = Value::Text(d.comment.value);
            for (const sis::Attribute& a : d.other_attributes) {
              f.emplace(a.name, a.value.empty() ? Value::Null() : Value::Text(a.value));
            }
            UpsertEntry(&list, "CODE", std::move(f));
          }
          SetList(r, "DELY", std::move(list));
        } else if constexpr (std::is_same_v<T, sis::FdelPayload>) {
          if (p.element == Presence::kMissing) return Reject("FDEL element missing");
          if (!p.empty) return Reject("non-empty FDEL");
          return {false, {}, true};
        }
        return {};
      },
      rec.payload);
}

}  // namespace

Result<Decision> DecideFlop(const StateView& view, const sis::DecodedMessage& msg,
                            const DecideContext& ctx) {
  const auto& body = std::get<sis::FlopBody>(msg.body);
  const std::string& styp = msg.meta.styp;
  Decision d;
  WorkingSet ws(view, &d, ctx.offset);
  std::size_t unknown = 0;
  std::string first_unknown;
  for (const sis::FlopRecord& rec : body.records) {
    auto cur = ws.FindFlight(rec.flid);
    if (!cur.ok()) return cur.status();
    if (!*cur) {
      // FLOP never creates a flight.
      if (unknown++ == 0) first_unknown = rec.flid;
      d.skipped.push_back({rec.index, rec.flid, "unknown-flight"});
      continue;
    }
    Flight f = **cur;
    Applied a = ApplyPayload(styp, rec, &f.data);
    if (a.rejected) {
      d.rejected.push_back({rec.index, rec.flid, a.reason});
      continue;
    }
    Result<bool> r =
        a.delete_flight ? ws.DeleteFlight(rec.flid, "fdel") : ws.PutFlight(std::move(f));
    if (!r.ok()) return r.status();
  }
  if (unknown == body.records.size()) {
    d.state = OutcomeState::kSkipped;
    d.reason = "unknown-flight:" + first_unknown;
  } else if (!d.rejected.empty() || unknown > 0) {
    d.reason = "applied " + std::to_string(body.records.size() - unknown - d.rejected.size()) +
               " of " + std::to_string(body.records.size());
    if (!d.rejected.empty()) {
      d.reason += "; rejected " + d.rejected.front().key + ": " + d.rejected.front().reason;
    }
    if (unknown > 0) d.reason += "; unknown-flight:" + first_unknown;
  }
  return d;
}

}  // namespace msgx
