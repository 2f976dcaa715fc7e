#include "codecs/sis_body_decoder.h"

#include <algorithm>
#include <array>
#include <string>
#include <utility>
#include <vector>

#include "codecs/identity_key.h"
#include "codecs/sis_fields.h"
#include "codecs/sis_time.h"
#include "codecs/sis_xml.h"

namespace msgx::sis {

namespace {

using pugi::xml_node;
using xml::AttrPath;
using xml::CodePoints;
using xml::ParseInt;
using xml::PathOf;
using xml::Quoted;
using xml::TextOf;
using xml::Trim;

// Convert() remembers up to this many element children of a node from its
// first pass: all of a FLOP list entry's; a schedule's flight (about 35) is
// walked on from the last one remembered.
constexpr std::size_t kInlineChildren = 16;

// Decodes one body. Holds the per-message context.
class BodyDecoder {
 public:
  BodyDecoder(const TimeZone& zone, std::string_view msg_type) : zone_(zone), type_(msg_type) {}

  Status Convert(xml_node node, FieldContext ctx, std::string_view parent, Element* out) const {
    out->name = node.name();
    for (pugi::xml_attribute a = node.first_attribute(); a; a = a.next_attribute()) {
      out->attributes.push_back({a.name(), a.value()});
    }
    // One pass over the children, each step a call into pugixml's shared
    // library: the first elements to convert, how many there are, and the
    // text by TextOf's rule.
    std::array<xml_node, kInlineChildren> elements;
    std::size_t n_elements = 0;
    xml_node first_data;
    int n_data = 0;
    for (xml_node c = node.first_child(); c; c = c.next_sibling()) {
      if (c.type() == pugi::node_element) {
        if (n_elements < kInlineChildren) elements[n_elements] = c;
        ++n_elements;
      } else if (xml::IsData(c) && n_data++ == 0) {
        first_data = c;
      }
    }
    out->text = xml::TextOfData(node, first_data, n_data);
    if (auto fmt = TimeFormatOf(ctx, parent, out->name)) {
      out->time = ParseTime(out->text, *fmt, zone_);
      if (out->time.state == TimeState::kUnparsable) return BadTime(node, out->text, *fmt);
    }
    out->children.reserve(n_elements);
    auto convert = [&](xml_node c) {
      out->children.emplace_back();
      return Convert(c, ctx, out->name, &out->children.back());
    };
    const std::size_t gathered = std::min(n_elements, kInlineChildren);
    for (std::size_t i = 0; i < gathered; ++i) {
      if (Status s = convert(elements[i]); !s.ok()) return s;
    }
    // More than were gathered (a schedule's flight): on from the last one.
    if (n_elements > gathered) {
      for (xml_node c = elements[gathered - 1].next_sibling(); c; c = c.next_sibling()) {
        if (c.type() != pugi::node_element) continue;
        if (Status s = convert(c); !s.ok()) return s;
      }
    }
    return Status::Ok();
  }

  Status BadTime(xml_node node, std::string_view raw, TimeFormat fmt) const {
    return Status::Malformed(PathOf(node, type_) + ": bad time " + Quoted(raw) + " (expected " +
                             std::string(TimeFormatName(fmt)) + ")");
  }

  Status Time(xml_node node, TimeFormat fmt, bool allow_unparsable, TimeField* out) const {
    if (!node) return Status::Ok();  // kMissing
    *out = ParseTime(TextOf(node), fmt, zone_);
    if (out->state == TimeState::kUnparsable && !allow_unparsable) {
      return BadTime(node, out->raw, fmt);
    }
    return Status::Ok();
  }

  static TextField Text(xml_node node) {
    TextField f;
    if (!node) return f;
    f.value = TextOf(node);
    f.presence = f.value.empty() ? Presence::kEmpty : Presence::kValue;
    return f;
  }

  static TextField AttrText(xml_node node, const char* name) {
    TextField f;
    pugi::xml_attribute a = node.attribute(name);
    if (!a) return f;
    f.value = std::string(Trim(a.value()));
    f.presence = f.value.empty() ? Presence::kEmpty : Presence::kValue;
    return f;
  }

  Status Int(xml_node node, IntField* out) const {
    if (!node) return Status::Ok();
    out->raw = TextOf(node);
    if (out->raw.empty()) {
      out->presence = Presence::kEmpty;
      return Status::Ok();
    }
    if (!ParseInt(out->raw, &out->value)) {
      return Status::Malformed(PathOf(node, type_) + ": not an integer " + Quoted(out->raw));
    }
    out->presence = Presence::kValue;
    return Status::Ok();
  }

  // ------------------------------------------------------------- FLOP ----

  Result<FlopBody> Flop(xml_node msg) const {
    FlopBody body;
    for (xml_node c = msg.first_child(); c; c = c.next_sibling()) {
      if (c.type() != pugi::node_element || std::string_view(c.name()) == "META") continue;
      if (std::string_view(c.name()) == "FLOP") {
        body.records.emplace_back();
        body.records.back().index = static_cast<int>(body.records.size());
        Status s = FlopRec(c, &body.records.back());
        if (!s.ok()) return s;
      } else {
        body.extras.emplace_back();
        Status s = Convert(c, FieldContext::kNone, "MSG", &body.extras.back());
        if (!s.ok()) return s;
      }
    }
    if (body.records.empty()) return Status::Malformed("FLOP: no FLOP record");
    return body;
  }

  // Children of one FLOP record, with a consumed mark each.
  struct Kids {
    std::vector<xml_node> nodes;
    std::vector<bool> used;
  };

  // The one child named `name` (marked used), or a null node. Twice is
  // MALFORMED.
  Status One(Kids& k, std::string_view name, xml_node* out) const {
    *out = xml_node();
    for (std::size_t i = 0; i < k.nodes.size(); ++i) {
      if (name != k.nodes[i].name()) continue;
      if (*out) return Status::Malformed(PathOf(k.nodes[i], type_) + ": given more than once");
      *out = k.nodes[i];
      k.used[i] = true;
    }
    return Status::Ok();
  }

  std::vector<xml_node> All(Kids& k, std::string_view name) const {
    std::vector<xml_node> out;
    for (std::size_t i = 0; i < k.nodes.size(); ++i) {
      if (name == k.nodes[i].name()) {
        out.push_back(k.nodes[i]);
        k.used[i] = true;
      }
    }
    return out;
  }

  Status FlopRec(xml_node rec, FlopRecord* r) const {
    Kids k;
    for (xml_node c = rec.first_child(); c; c = c.next_sibling()) {
      if (c.type() == pugi::node_element) k.nodes.push_back(c);
    }
    k.used.assign(k.nodes.size(), false);
    xml_node flid, ffid;
    Status s = One(k, "FLID", &flid);
    if (!s.ok()) return s;
    const std::string rec_path = "FLOP[" + std::to_string(r->index) + "]";
    if (!flid) return Status::Malformed(rec_path + "/FLID: missing");
    r->flid = BoundKey(TextOf(flid), kMaxFlidChars);
    if (r->flid.empty()) return Status::Malformed(rec_path + "/FLID: empty");
    if (!(s = One(k, "FFID", &ffid)).ok()) return s;
    r->ffid = Text(ffid);

    const FlopStypInfo* info = FindFlopStyp(styp_);
    if (info == nullptr) return Status::Unsupported("no handler for FLOP-" + styp_);
    if (!(s = Payload(*info, k, rec_path, &r->payload)).ok()) return s;

    for (std::size_t i = 0; i < k.nodes.size(); ++i) {
      if (k.used[i]) continue;
      r->extras.emplace_back();
      if (!(s = Convert(k.nodes[i], FieldContext::kNone, "FLOP", &r->extras.back())).ok()) {
        return s;
      }
    }
    return Status::Ok();
  }

  Status Payload(const FlopStypInfo& info, Kids& k, const std::string& rec_path,
                 FlopPayload* out) const {
    xml_node a, b, c;
    Status s;
    switch (info.kind) {
      case FlopKind::kText: {
        if (!(s = One(k, styp_, &a)).ok()) return s;
        *out = TextPayload{Text(a)};
        return s;
      }
      case FlopKind::kTimeClear:
      case FlopKind::kTimeReject: {
        if (!(s = One(k, styp_, &a)).ok()) return s;
        TimePayload p;
        p.reject_unparsable = info.kind == FlopKind::kTimeReject;
        if (!(s = Time(a, TimeFormat::kDayTime, p.reject_unparsable, &p.value)).ok()) return s;
        *out = p;
        return s;
      }
      case FlopKind::kChar: {
        if (!(s = One(k, styp_, &a)).ok()) return s;
        CharPayload p{Text(a)};
        if (CodePoints(p.value.value) > 1) {
          return Status::Malformed(PathOf(a, type_) + ": not one character " +
                                   Quoted(p.value.value));
        }
        *out = p;
        return s;
      }
      case FlopKind::kInt: {
        if (!(s = One(k, styp_, &a)).ok()) return s;
        IntPayload p;
        if (!(s = Int(a, &p.value)).ok()) return s;
        *out = p;
        return s;
      }
      case FlopKind::kHnag: {
        HnagPayload p;
        if (!(s = One(k, "FHAG", &a)).ok() || !(s = Int(a, &p.fhag)).ok()) return s;
        if (!(s = One(k, "PHAG", &b)).ok() || !(s = Int(b, &p.phag)).ok()) return s;
        if (!(s = One(k, "MHAG", &c)).ok() || !(s = Int(c, &p.mhag)).ok()) return s;
        *out = p;
        return s;
      }
      case FlopKind::kVipp: {
        if (!(s = One(k, "VIPP", &a)).ok() || !(s = One(k, "VIPR", &b)).ok()) return s;
        *out = VippPayload{Text(a), Text(b)};
        return s;
      }
      case FlopKind::kTaop: {
        if (!(s = One(k, "TAOP", &a)).ok() || !(s = One(k, "TAFL", &b)).ok() ||
            !(s = One(k, "TAID", &c)).ok()) {
          return s;
        }
        *out = TaopPayload{Text(a), Text(b), Text(c)};
        return s;
      }
      case FlopKind::kExss: {
        if (!(s = One(k, "EXSC", &a)).ok() || !(s = One(k, "EXSR", &b)).ok()) return s;
        *out = ExssPayload{Text(a), Text(b)};
        return s;
      }
      case FlopKind::kFdiv: {
        if (!(s = One(k, "FDIV", &a)).ok()) return s;
        FdivPayload p;
        if (a) {
          p.element = Text(a).presence == Presence::kValue || a.first_attribute()
                          ? Presence::kValue
                          : Presence::kEmpty;
          p.ddes = AttrText(a, "DDES");
          p.ddir = AttrText(a, "DDIR");
          p.reason = Text(a);
        }
        *out = p;
        return s;
      }
      case FlopKind::kFret: {
        if (!(s = One(k, "FRET", &a)).ok()) return s;
        FretPayload p;
        if (a) {
          p.element =
              Text(a).has_value() || a.first_attribute() ? Presence::kValue : Presence::kEmpty;
          p.reid = AttrText(a, "REID");
          p.reason = Text(a);
        }
        *out = p;
        return s;
      }
      case FlopKind::kFlab: {
        if (!(s = One(k, "FLAB", &a)).ok()) return s;
        FlabPayload p;
        if (a) {
          p.element =
              Text(a).has_value() || a.first_attribute() ? Presence::kValue : Presence::kEmpty;
          p.ares = AttrText(a, "ARES");
          p.reason = Text(a);
        }
        *out = p;
        return s;
      }
      case FlopKind::kPort: {
        if (!(s = One(k, "PORT", &a)).ok()) return s;
        PortPayload p;
        if (a) {
          p.element = a.first_child() ? Presence::kValue : Presence::kEmpty;
          xml_node potm = a.child("POTM");
          if (!(s = Time(potm, TimeFormat::kDayTime, false, &p.potm)).ok()) return s;
          p.poid = Text(a.child("POID"));
        }
        *out = p;
        return s;
      }
      case FlopKind::kList: {
        ListPayload p;
        p.element_name = styp_;
        p.key_name = std::string(info.key_name);
        for (xml_node e : All(k, styp_)) {
          ListEntry entry;
          if (!(s = Convert(e, FieldContext::kFlop, "FLOP", &entry.element)).ok()) return s;
          entry.key = info.key_is_attribute ? entry.element.AttrText(p.key_name)
                                            : entry.element.ChildText(p.key_name);
          if (!entry.element.IsBlank()) p.all_blank = false;
          p.entries.push_back(std::move(entry));
        }
        *out = p;
        return s;
      }
      case FlopKind::kDely: {
        DelyPayload p;
        bool all_blank = true;
        for (xml_node e : All(k, "DELY")) {
          DelayEntry d;
          d.code = AttrText(e, "CODE");
          d.comment = Text(e);
          if (pugi::xml_attribute strt = e.attribute("STRT")) {
            d.strt = ParseTime(Trim(strt.value()), TimeFormat::kDayTime, zone_);
            if (d.strt.state == TimeState::kUnparsable) {
              return Status::Malformed(AttrPath(e, "STRT", type_) + ": bad time " +
                                       Quoted(d.strt.raw) + " (expected ddMMMyyHHmm)");
            }
          }
          if (pugi::xml_attribute dura = e.attribute("DURA")) {
            d.dura = ParseTime(Trim(dura.value()), TimeFormat::kHhmm, zone_);
            if (d.dura.state == TimeState::kUnparsable) {
              return Status::Malformed(AttrPath(e, "DURA", type_) + ": bad duration " +
                                       Quoted(d.dura.raw) + " (expected HHMM)");
            }
          }
          bool blank = !d.comment.has_value() && !e.first_child().first_child();
          for (pugi::xml_attribute at = e.first_attribute(); at; at = at.next_attribute()) {
            const std::string_view n = at.name();
            if (!Trim(at.value()).empty()) blank = false;
            if (n != "CODE" && n != "STRT" && n != "DURA") {
              d.other_attributes.push_back({at.name(), at.value()});
            }
          }
          for (xml_node ch = e.first_child(); ch; ch = ch.next_sibling()) {
            if (ch.type() == pugi::node_element) {
              return Status::Malformed(PathOf(ch, type_) + ": unexpected element in DELY");
            }
          }
          if (!blank) all_blank = false;
          p.entries.push_back(std::move(d));
        }
        if (all_blank && !p.entries.empty()) {
          p.entries.clear();
          p.delete_all = true;
        }
        *out = p;
        return s;
      }
      case FlopKind::kFdel: {
        if (!(s = One(k, "FDEL", &a)).ok()) return s;
        FdelPayload p;
        if (a) {
          p.element = Presence::kEmpty;
          p.empty = !a.first_attribute() && TextOf(a).empty() &&
                    !a.find_child([](xml_node n) { return n.type() == pugi::node_element; });
          if (!p.empty) p.element = Presence::kValue;
        }
        *out = p;
        return s;
      }
    }
    return Status::Internal(rec_path + ": unknown payload kind");
  }

  // ------------------------------------------------------- SCHD / SCHS ----

  Result<ScheduleBody> Schedule(xml_node msg) const {
    ScheduleBody body;
    body.seasonal = type_ == "SCHS";
    const FieldContext ctx = body.seasonal ? FieldContext::kSchs : FieldContext::kSchd;
    xml_node container;
    Status s;
    for (xml_node c = msg.first_child(); c; c = c.next_sibling()) {
      if (c.type() != pugi::node_element || std::string_view(c.name()) == "META") continue;
      if (!container && type_ == c.name()) {
        container = c;
        continue;
      }
      body.extras.emplace_back();
      if (!(s = Convert(c, FieldContext::kNone, "MSG", &body.extras.back())).ok()) return s;
    }
    if (!container) return Status::Malformed(type_ + ": no " + type_ + " element");
    bool have_recs = false;
    for (xml_node c = container.first_child(); c; c = c.next_sibling()) {
      if (c.type() != pugi::node_element) continue;
      const std::string_view name = c.name();
      if (name == "FLTR") {
        body.records.emplace_back();
        ScheduleRecord& r = body.records.back();
        r.index = static_cast<int>(body.records.size());
        if (!(s = Fltr(c, ctx, &r)).ok()) return s;
      } else if (name == "RECS" && !have_recs) {
        have_recs = true;
        if (!(s = Int(c, &body.recs)).ok()) return s;
      } else if (body.seasonal && name == "SNAM" && body.snam.presence == Presence::kMissing) {
        body.snam = Text(c);
      } else if (body.seasonal && name == "APCD" && body.apcd.presence == Presence::kMissing) {
        body.apcd = Text(c);
      } else if (body.seasonal && name == "SDAT" && body.sdat.state == TimeState::kMissing) {
        if (!(s = Time(c, TimeFormat::kDate, false, &body.sdat)).ok()) return s;
      } else if (body.seasonal && name == "EDAT" && body.edat.state == TimeState::kMissing) {
        if (!(s = Time(c, TimeFormat::kDate, false, &body.edat)).ok()) return s;
      } else {
        body.extras.emplace_back();
        if (!(s = Convert(c, FieldContext::kNone, type_, &body.extras.back())).ok()) return s;
      }
    }
    if (!(s = CheckRecs(body.recs, body.records.size(), &body.recs_mismatch, "FLTR")).ok()) {
      return s;
    }
    return body;
  }

  Status Fltr(xml_node fltr, FieldContext ctx, ScheduleRecord* r) const {
    for (pugi::xml_attribute a = fltr.first_attribute(); a; a = a.next_attribute()) {
      r->attributes.push_back({a.name(), a.value()});
    }
    Status s;
    std::size_t kids = 0;
    for (xml_node c = fltr.first_child(); c; c = c.next_sibling()) {
      kids += c.type() == pugi::node_element ? 1 : 0;
    }
    r->fields.reserve(kids);
    for (xml_node c = fltr.first_child(); c; c = c.next_sibling()) {
      if (c.type() != pugi::node_element) continue;
      r->fields.emplace_back();
      if (!(s = Convert(c, ctx, "FLTR", &r->fields.back())).ok()) return s;
    }
    if (const Element* flid = r->Field("FLID")) {
      r->flid.value = flid->text.empty() ? flid->text : BoundKey(flid->text, kMaxFlidChars);
      r->flid.presence = flid->text.empty() ? Presence::kEmpty : Presence::kValue;
    }
    if (const Element* sodt = r->Field("SODT")) r->sodt = sodt->time;
    if (ctx == FieldContext::kSchd) {
      const std::string path = "FLTR[" + std::to_string(r->index) + "]/FLID";
      if (r->flid.presence == Presence::kMissing) return Status::Malformed(path + ": missing");
      if (r->flid.presence == Presence::kEmpty) return Status::Malformed(path + ": empty");
      for (std::string_view req : {"ALCD", "FLNO", "MVIN", "SODT", "FLTY", "FLIN", "ACFT"}) {
        const Element* f = r->Field(req);
        if (f == nullptr || f->text.empty()) r->missing_required.emplace_back(req);
      }
    }
    return s;
  }

  Status CheckRecs(const IntField& recs, std::size_t carried, bool* mismatch,
                   std::string_view record_name) const {
    const bool snapshot = IsSnapshotStyp(styp_);
    if (!recs.has_value()) {
      if (snapshot) {
        return Status::Malformed(
            "RECS: " + std::string(recs.presence == Presence::kMissing ? "missing" : "empty") +
            " in a " + styp_ + " snapshot");
      }
      return Status::Ok();
    }
    if (recs.value == static_cast<std::int64_t>(carried)) return Status::Ok();
    if (snapshot) {
      return Status::Protocol("RECS: says " + std::to_string(recs.value) + " but the " + styp_ +
                              " snapshot carries " + std::to_string(carried) + " " +
                              std::string(record_name) + " records");
    }
    *mismatch = true;
    return Status::Ok();
  }

  // --------------------------------------------------------- reference ----

  Result<ReferenceBody> Reference(xml_node msg) const {
    ReferenceBody body;
    body.type = type_;
    const std::string_view key_name = ReferenceKeyField(type_);
    bool have_recs = false;
    Status s;
    for (xml_node c = msg.first_child(); c; c = c.next_sibling()) {
      if (c.type() != pugi::node_element) continue;
      const std::string_view name = c.name();
      if (name == "META") continue;
      if (name == type_) {
        body.records.emplace_back();
        ReferenceRecord& r = body.records.back();
        r.index = static_cast<int>(body.records.size());
        r.key_name = std::string(key_name);
        for (pugi::xml_attribute a = c.first_attribute(); a; a = a.next_attribute()) {
          r.attributes.push_back({a.name(), a.value()});
        }
        xml_node key;
        for (xml_node f = c.first_child(); f; f = f.next_sibling()) {
          if (f.type() != pugi::node_element) continue;
          if (!key && key_name == f.name()) {
            key = f;
            continue;
          }
          r.fields.emplace_back();
          if (!(s = Convert(f, FieldContext::kNone, type_, &r.fields.back())).ok()) return s;
        }
        const std::string path =
            type_ + "[" + std::to_string(r.index) + "]/" + std::string(key_name);
        if (!key) return Status::Malformed(path + ": missing");
        r.key = BoundKey(TextOf(key), kMaxReferenceKeyChars);
        if (r.key.empty()) return Status::Malformed(path + ": empty");
      } else if (name == "RECS" && !have_recs) {
        have_recs = true;
        if (!(s = Int(c, &body.recs)).ok()) return s;
      } else {
        body.extras.emplace_back();
        if (!(s = Convert(c, FieldContext::kNone, "MSG", &body.extras.back())).ok()) return s;
      }
    }
    if (!(s = CheckRecs(body.recs, body.records.size(), &body.recs_mismatch, type_)).ok()) {
      return s;
    }
    return body;
  }

  void SetStyp(std::string styp) { styp_ = std::move(styp); }

 private:
  const TimeZone& zone_;
  std::string type_;
  std::string styp_;
};

}  // namespace

Status DecodeBodyOf(pugi::xml_node msg, const TimeZone& zone, const Meta& meta,
                    DecodedMessage* out) {
  BodyDecoder body(zone, meta.type);
  body.SetStyp(meta.styp);
  if (meta.type == "FLOP") {
    Result<FlopBody> r = body.Flop(msg);
    if (!r.ok()) return r.status();
    out->body = std::move(r).value();
  } else if (meta.type == "SCHD" || meta.type == "SCHS") {
    Result<ScheduleBody> r = body.Schedule(msg);
    if (!r.ok()) return r.status();
    out->body = std::move(r).value();
  } else {
    Result<ReferenceBody> r = body.Reference(msg);
    if (!r.ok()) return r.status();
    out->body = std::move(r).value();
  }
  return Status::Ok();
}

Status ConvertElement(pugi::xml_node node, const TimeZone& zone, std::string_view parent,
                      Element* out) {
  BodyDecoder raw(zone, "");
  return raw.Convert(node, FieldContext::kNone, parent, out);
}

}  // namespace msgx::sis
