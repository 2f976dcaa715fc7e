// The 23 reference types (docs/fold.md#reference-data) and the TYPE/STYP
// router.
#include <array>
#include <set>

#include "stream/fold/handlers/handlers.h"
#include "stream/fold/handlers/working_set.h"

namespace msgx {
namespace {

constexpr std::array<std::string_view, 23> kReferenceTypes = {
    "ABDG", "ABNR", "AIRC", "AIRL", "ARPT", "BLST", "CHLT", "CITY", "CLST", "COUL", "DLYL", "FLTL",
    "GLST", "HLTR", "ORGN", "PLST", "REGL", "REGN", "SLST", "STTS", "TLST", "VIPL", "VIPS"};

ReferenceRecord FromMessage(const std::string& type, const sis::ReferenceRecord& r) {
  ReferenceRecord out;
  out.type = type;
  out.key = r.key;
  for (const sis::Attribute& a : r.attributes) {
    if (!a.value.empty()) out.data.fields[a.name] = Value::Text(a.value);
  }
  AddRecordChildren(r.fields, &out.data, r.key_name);
  return out;
}

}  // namespace

bool IsReferenceType(std::string_view type) {
  for (std::string_view t : kReferenceTypes) {
    if (t == type) return true;
  }
  return false;
}

Result<Decision> DecideReference(const StateView& view, const sis::DecodedMessage& msg,
                                 const DecideContext& ctx) {
  const auto& body = std::get<sis::ReferenceBody>(msg.body);
  const std::string& type = msg.meta.type;
  const std::string& styp = msg.meta.styp;
  const bool snapshot = sis::IsSnapshotStyp(styp);
  if (!snapshot && styp != "ADD" && styp != "UPD" && styp != "DEL") {
    return Status::Unsupported("no handler for " + type + "-" + styp);
  }
  Decision d;
  WorkingSet ws(view, &d, ctx.offset);
  std::set<std::string> named;
  for (const sis::ReferenceRecord& r : body.records) {
    named.insert(r.key);
    if (styp == "DEL") {
      auto del = ws.DeleteReference(type, r.key);
      if (!del.ok()) return del.status();
      if (!*del) d.skipped.push_back({r.index, r.key, "unknown-record"});
      continue;
    }
    // ADD/UPD/DNLD/RESP carry whole records: the record is replaced.
    auto put = ws.PutReference(FromMessage(type, r));
    if (!put.ok()) return put.status();
  }
  if (snapshot) {
    auto keys = ws.ReferenceKeys(type);
    if (!keys.ok()) return keys.status();
    for (const std::string& k : *keys) {
      if (named.count(k)) continue;
      auto cur = ws.GetReference(type, k);
      if (!cur.ok()) return cur.status();
      // Only records from the AODB are replaced; others are not ours.
      if (!cur->has_value() || (*cur)->source != kAodbSource) continue;
      auto del = ws.DeleteReference(type, k);
      if (!del.ok()) return del.status();
    }
  }
  return d;
}

Result<Decision> Decide(const StateView& view, const sis::DecodedMessage& msg,
                        const DecideContext& ctx) {
  const std::string& type = msg.meta.type;
  if (type == "FLOP" && std::holds_alternative<sis::FlopBody>(msg.body)) {
    return DecideFlop(view, msg, ctx);
  }
  if (type == "SCHD" && std::holds_alternative<sis::ScheduleBody>(msg.body)) {
    return DecideSchd(view, msg, ctx);
  }
  if (type == "SCHS" && std::holds_alternative<sis::ScheduleBody>(msg.body)) {
    return DecideSchs(view, msg, ctx);
  }
  if (IsReferenceType(type) && std::holds_alternative<sis::ReferenceBody>(msg.body)) {
    return DecideReference(view, msg, ctx);
  }
  return Status::Unsupported("no handler for " + type + "-" + msg.meta.styp);
}

}  // namespace msgx
