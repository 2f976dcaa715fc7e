#include "codecs/sis_json.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdio>
#include <type_traits>

namespace msgx::sis {
namespace {

using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

void Str(Writer& w, std::string_view s) {
  w.String(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}
void Key(Writer& w, std::string_view s) {
  w.Key(s.data(), static_cast<rapidjson::SizeType>(s.size()));
}

void Put(Writer& w, std::string_view name, const TextField& f);
void Put(Writer& w, std::string_view name, const IntField& f);
void Put(Writer& w, std::string_view name, const TimeField& t);
void Put(Writer& w, std::string_view name, std::string_view s);

void Text(Writer& w, const TextField& f) {
  if (f.presence == Presence::kMissing) {
    w.Null();
  } else {
    Str(w, f.value);
  }
}

void Int(Writer& w, const IntField& f) {
  if (f.presence == Presence::kMissing) {
    w.Null();
  } else if (f.presence == Presence::kEmpty) {
    Str(w, "");
  } else {
    w.Int64(f.value);
  }
}

void Time(Writer& w, const TimeField& t) {
  switch (t.state) {
    case TimeState::kMissing:
      w.Null();
      return;
    case TimeState::kEmpty:
      Str(w, "");
      return;
    case TimeState::kUnparsable:
      w.StartObject();
      Put(w, "raw", t.raw);
      Put(w, "state", "unparsable");
      w.EndObject();
      return;
    case TimeState::kValue:
      w.StartObject();
      Put(w, "raw", t.raw);
      Put(w, "state", "value");
      if (t.format == TimeFormat::kHhmm) {
        Key(w, "minutes");
        w.Int(t.minutes);
      } else {
        Put(w, "utc", FormatUtc(t.utc_micros));
        Key(w, "utc_micros");
        w.Int64(t.utc_micros);
      }
      w.EndObject();
      return;
  }
}

// One "NAME": value member.
void Put(Writer& w, std::string_view name, const TextField& f) {
  Key(w, name);
  Text(w, f);
}
void Put(Writer& w, std::string_view name, const IntField& f) {
  Key(w, name);
  Int(w, f);
}
void Put(Writer& w, std::string_view name, const TimeField& t) {
  Key(w, name);
  Time(w, t);
}
void Put(Writer& w, std::string_view name, std::string_view s) {
  Key(w, name);
  Str(w, s);
}

void Attrs(Writer& w, const std::vector<Attribute>& attrs) {
  w.StartObject();
  for (const Attribute& a : attrs) {
    Key(w, a.name);
    Str(w, a.value);
  }
  w.EndObject();
}

void Elem(Writer& w, const Element& e);

void Elems(Writer& w, const std::vector<Element>& es) {
  w.StartArray();
  for (const Element& e : es) Elem(w, e);
  w.EndArray();
}

// {"name":..,"attrs":{..},"text":..,"time":..,"children":[..]}; empty parts
// are left out.
void Elem(Writer& w, const Element& e) {
  w.StartObject();
  Put(w, "name", e.name);
  if (!e.attributes.empty()) {
    Key(w, "attrs");
    Attrs(w, e.attributes);
  }
  if (!e.text.empty()) {
    Put(w, "text", e.text);
  }
  if (e.time.state != TimeState::kMissing) {
    Put(w, "time", e.time);
  }
  if (!e.children.empty()) {
    Key(w, "children");
    Elems(w, e.children);
  }
  w.EndObject();
}

std::string_view PresenceName(Presence p) {
  switch (p) {
    case Presence::kMissing:
      return "missing";
    case Presence::kEmpty:
      return "empty";
    case Presence::kValue:
      return "value";
  }
  return "?";
}

void Payload(Writer& w, const FlopPayload& payload) {
  w.StartObject();
  std::visit(
      [&w](const auto& p) {
        using T = std::decay_t<decltype(p)>;
        Key(w, "kind");
        if constexpr (std::is_same_v<T, TextPayload>) {
          Str(w, "text");
          Put(w, "value", p.value);
        } else if constexpr (std::is_same_v<T, TimePayload>) {
          Str(w, "time");
          Key(w, "reject_unparsable");
          w.Bool(p.reject_unparsable);
          Put(w, "value", p.value);
        } else if constexpr (std::is_same_v<T, CharPayload>) {
          Str(w, "char");
          Put(w, "value", p.value);
        } else if constexpr (std::is_same_v<T, IntPayload>) {
          Str(w, "int");
          Put(w, "value", p.value);
        } else if constexpr (std::is_same_v<T, HnagPayload>) {
          Str(w, "hnag");
          Put(w, "FHAG", p.fhag);
          Put(w, "PHAG", p.phag);
          Put(w, "MHAG", p.mhag);
        } else if constexpr (std::is_same_v<T, VippPayload>) {
          Str(w, "vipp");
          Put(w, "VIPP", p.vipp);
          Put(w, "VIPR", p.vipr);
        } else if constexpr (std::is_same_v<T, TaopPayload>) {
          Str(w, "taop");
          Put(w, "TAOP", p.taop);
          Put(w, "TAFL", p.tafl);
          Put(w, "TAID", p.taid);
        } else if constexpr (std::is_same_v<T, ExssPayload>) {
          Str(w, "exss");
          Put(w, "EXSC", p.exsc);
          Put(w, "EXSR", p.exsr);
        } else if constexpr (std::is_same_v<T, FdivPayload>) {
          Str(w, "fdiv");
          Put(w, "element", PresenceName(p.element));
          Put(w, "DDES", p.ddes);
          Put(w, "DDIR", p.ddir);
          Put(w, "reason", p.reason);
        } else if constexpr (std::is_same_v<T, FretPayload>) {
          Str(w, "fret");
          Put(w, "element", PresenceName(p.element));
          Put(w, "REID", p.reid);
          Put(w, "reason", p.reason);
        } else if constexpr (std::is_same_v<T, FlabPayload>) {
          Str(w, "flab");
          Put(w, "element", PresenceName(p.element));
          Put(w, "ARES", p.ares);
          Put(w, "reason", p.reason);
        } else if constexpr (std::is_same_v<T, PortPayload>) {
          Str(w, "port");
          Put(w, "element", PresenceName(p.element));
          Put(w, "POTM", p.potm);
          Put(w, "POID", p.poid);
        } else if constexpr (std::is_same_v<T, ListPayload>) {
          Str(w, "list");
          Put(w, "element", p.element_name);
          Put(w, "key_name", p.key_name);
          Key(w, "all_blank");
          w.Bool(p.all_blank);
          Key(w, "entries");
          w.StartArray();
          for (const ListEntry& e : p.entries) {
            w.StartObject();
            Put(w, "key", e.key);
            Key(w, "element");
            Elem(w, e.element);
            w.EndObject();
          }
          w.EndArray();
        } else if constexpr (std::is_same_v<T, DelyPayload>) {
          Str(w, "dely");
          Key(w, "delete_all");
          w.Bool(p.delete_all);
          Key(w, "entries");
          w.StartArray();
          for (const DelayEntry& d : p.entries) {
            w.StartObject();
            Put(w, "CODE", d.code);
            Put(w, "STRT", d.strt);
            Put(w, "DURA", d.dura);
            Put(w, "comment", d.comment);
            if (!d.other_attributes.empty()) {
              Key(w, "other_attributes");
              Attrs(w, d.other_attributes);
            }
            w.EndObject();
          }
          w.EndArray();
        } else if constexpr (std::is_same_v<T, FdelPayload>) {
          Str(w, "fdel");
          Put(w, "element", PresenceName(p.element));
          Key(w, "empty");
          w.Bool(p.empty);
        }
      },
      payload);
  w.EndObject();
}

void WriteMeta(Writer& w, const Meta& m) {
  w.StartObject();
  Put(w, "SNDR", m.sndr);
  Put(w, "SEQN", m.seqn);
  Key(w, "seqn_number");
  if (m.seqn_number) {
    w.Int64(*m.seqn_number);
  } else {
    w.Null();
  }
  Put(w, "DTTM", m.dttm);
  Put(w, "dttm_utc", FormatUtc(m.dttm_utc_micros));
  Put(w, "TYPE", m.type);
  Put(w, "STYP", m.styp);
  if (!m.extra.empty()) {
    Key(w, "extra");
    Elems(w, m.extra);
  }
  w.EndObject();
}

void Extras(Writer& w, const std::vector<Element>& extras) {
  if (extras.empty()) return;
  Key(w, "extras");
  Elems(w, extras);
}

void Body(Writer& w, const FlopBody& b) {
  Key(w, "flop");
  w.StartObject();
  Key(w, "records");
  w.StartArray();
  for (const FlopRecord& r : b.records) {
    w.StartObject();
    Key(w, "index");
    w.Int(r.index);
    Put(w, "FLID", r.flid);
    Put(w, "FFID", r.ffid);
    Key(w, "payload");
    Payload(w, r.payload);
    Extras(w, r.extras);
    w.EndObject();
  }
  w.EndArray();
  Extras(w, b.extras);
  w.EndObject();
}

void Body(Writer& w, const ScheduleBody& b) {
  Key(w, "schedule");
  w.StartObject();
  Key(w, "seasonal");
  w.Bool(b.seasonal);
  Put(w, "RECS", b.recs);
  Key(w, "recs_mismatch");
  w.Bool(b.recs_mismatch);
  if (b.seasonal) {
    Put(w, "SNAM", b.snam);
    Put(w, "APCD", b.apcd);
    Put(w, "SDAT", b.sdat);
    Put(w, "EDAT", b.edat);
  }
  Key(w, "records");
  w.StartArray();
  for (const ScheduleRecord& r : b.records) {
    w.StartObject();
    Key(w, "index");
    w.Int(r.index);
    Put(w, "FLID", r.flid);
    Put(w, "SODT", r.sodt);
    if (!r.attributes.empty()) {
      Key(w, "attrs");
      Attrs(w, r.attributes);
    }
    if (!r.missing_required.empty()) {
      Key(w, "missing_required");
      w.StartArray();
      for (const std::string& m : r.missing_required) Str(w, m);
      w.EndArray();
    }
    Key(w, "fields");
    Elems(w, r.fields);
    w.EndObject();
  }
  w.EndArray();
  Extras(w, b.extras);
  w.EndObject();
}

void Body(Writer& w, const ReferenceBody& b) {
  Key(w, "reference");
  w.StartObject();
  Put(w, "type", b.type);
  Put(w, "RECS", b.recs);
  Key(w, "recs_mismatch");
  w.Bool(b.recs_mismatch);
  Key(w, "records");
  w.StartArray();
  for (const ReferenceRecord& r : b.records) {
    w.StartObject();
    Key(w, "index");
    w.Int(r.index);
    Put(w, "key_name", r.key_name);
    Put(w, "key", r.key);
    if (!r.attributes.empty()) {
      Key(w, "attrs");
      Attrs(w, r.attributes);
    }
    Key(w, "fields");
    Elems(w, r.fields);
    w.EndObject();
  }
  w.EndArray();
  Extras(w, b.extras);
  w.EndObject();
}

}  // namespace

std::string FormatUtc(MicrosSinceEpoch micros) {
  std::int64_t secs = micros / 1'000'000;
  std::int64_t frac = micros % 1'000'000;
  if (frac < 0) {
    frac += 1'000'000;
    --secs;
  }
  std::int64_t days = secs / 86400;
  std::int64_t rem = secs % 86400;
  if (rem < 0) {
    rem += 86400;
    --days;
  }
  // civil_from_days (H. Hinnant).
  const std::int64_t z = days + 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const std::int64_t d = doy - (153 * mp + 2) / 5 + 1;
  const std::int64_t m = mp < 10 ? mp + 3 : mp - 9;
  const std::int64_t y = yoe + era * 400 + (m <= 2);
  char buf[64];
  if (frac != 0) {
    std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lld.%06lldZ",
                  static_cast<long long>(y), static_cast<long long>(m), static_cast<long long>(d),
                  static_cast<long long>(rem / 3600), static_cast<long long>(rem / 60 % 60),
                  static_cast<long long>(rem % 60), static_cast<long long>(frac));
  } else {
    std::snprintf(buf, sizeof buf, "%04lld-%02lld-%02lldT%02lld:%02lld:%02lldZ",
                  static_cast<long long>(y), static_cast<long long>(m), static_cast<long long>(d),
                  static_cast<long long>(rem / 3600), static_cast<long long>(rem / 60 % 60),
                  static_cast<long long>(rem % 60));
  }
  return buf;
}

std::string ToCanonicalJson(const DecodedMessage& message) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  Key(w, "meta");
  WriteMeta(w, message.meta);
  std::visit([&w](const auto& b) { Body(w, b); }, message.body);
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

std::string ErrorToJson(const Status& status) {
  rapidjson::StringBuffer sb;
  Writer w(sb);
  w.StartObject();
  Put(w, "class", ErrorClassName(status.error_class()));
  Put(w, "error", status.message());
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

}  // namespace msgx::sis
