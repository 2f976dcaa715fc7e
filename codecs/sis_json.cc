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
      Key(w, "raw");
      Str(w, t.raw);
      Key(w, "state");
      Str(w, "unparsable");
      w.EndObject();
      return;
    case TimeState::kValue:
      w.StartObject();
      Key(w, "raw");
      Str(w, t.raw);
      Key(w, "state");
      Str(w, "value");
      if (t.format == TimeFormat::kHhmm) {
        Key(w, "minutes");
        w.Int(t.minutes);
      } else {
        Key(w, "utc");
        Str(w, FormatUtc(t.utc_micros));
        Key(w, "utc_micros");
        w.Int64(t.utc_micros);
      }
      w.EndObject();
      return;
  }
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
  Key(w, "name");
  Str(w, e.name);
  if (!e.attributes.empty()) {
    Key(w, "attrs");
    Attrs(w, e.attributes);
  }
  if (!e.text.empty()) {
    Key(w, "text");
    Str(w, e.text);
  }
  if (e.time.state != TimeState::kMissing) {
    Key(w, "time");
    Time(w, e.time);
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
          Key(w, "value");
          Text(w, p.value);
        } else if constexpr (std::is_same_v<T, TimePayload>) {
          Str(w, "time");
          Key(w, "reject_unparsable");
          w.Bool(p.reject_unparsable);
          Key(w, "value");
          Time(w, p.value);
        } else if constexpr (std::is_same_v<T, CharPayload>) {
          Str(w, "char");
          Key(w, "value");
          Text(w, p.value);
        } else if constexpr (std::is_same_v<T, IntPayload>) {
          Str(w, "int");
          Key(w, "value");
          Int(w, p.value);
        } else if constexpr (std::is_same_v<T, HnagPayload>) {
          Str(w, "hnag");
          Key(w, "FHAG");
          Int(w, p.fhag);
          Key(w, "PHAG");
          Int(w, p.phag);
          Key(w, "MHAG");
          Int(w, p.mhag);
        } else if constexpr (std::is_same_v<T, VippPayload>) {
          Str(w, "vipp");
          Key(w, "VIPP");
          Text(w, p.vipp);
          Key(w, "VIPR");
          Text(w, p.vipr);
        } else if constexpr (std::is_same_v<T, TaopPayload>) {
          Str(w, "taop");
          Key(w, "TAOP");
          Text(w, p.taop);
          Key(w, "TAFL");
          Text(w, p.tafl);
          Key(w, "TAID");
          Text(w, p.taid);
        } else if constexpr (std::is_same_v<T, ExssPayload>) {
          Str(w, "exss");
          Key(w, "EXSC");
          Text(w, p.exsc);
          Key(w, "EXSR");
          Text(w, p.exsr);
        } else if constexpr (std::is_same_v<T, FdivPayload>) {
          Str(w, "fdiv");
          Key(w, "element");
          Str(w, PresenceName(p.element));
          Key(w, "DDES");
          Text(w, p.ddes);
          Key(w, "DDIR");
          Text(w, p.ddir);
          Key(w, "reason");
          Text(w, p.reason);
        } else if constexpr (std::is_same_v<T, FretPayload>) {
          Str(w, "fret");
          Key(w, "element");
          Str(w, PresenceName(p.element));
          Key(w, "REID");
          Text(w, p.reid);
          Key(w, "reason");
          Text(w, p.reason);
        } else if constexpr (std::is_same_v<T, FlabPayload>) {
          Str(w, "flab");
          Key(w, "element");
          Str(w, PresenceName(p.element));
          Key(w, "ARES");
          Text(w, p.ares);
          Key(w, "reason");
          Text(w, p.reason);
        } else if constexpr (std::is_same_v<T, PortPayload>) {
          Str(w, "port");
          Key(w, "element");
          Str(w, PresenceName(p.element));
          Key(w, "POTM");
          Time(w, p.potm);
          Key(w, "POID");
          Text(w, p.poid);
        } else if constexpr (std::is_same_v<T, ListPayload>) {
          Str(w, "list");
          Key(w, "element");
          Str(w, p.element_name);
          Key(w, "key_name");
          Str(w, p.key_name);
          Key(w, "all_blank");
          w.Bool(p.all_blank);
          Key(w, "entries");
          w.StartArray();
          for (const ListEntry& e : p.entries) {
            w.StartObject();
            Key(w, "key");
            Text(w, e.key);
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
            Key(w, "CODE");
            Text(w, d.code);
            Key(w, "STRT");
            Time(w, d.strt);
            Key(w, "DURA");
            Time(w, d.dura);
            Key(w, "comment");
            Text(w, d.comment);
            if (!d.other_attributes.empty()) {
              Key(w, "other_attributes");
              Attrs(w, d.other_attributes);
            }
            w.EndObject();
          }
          w.EndArray();
        } else if constexpr (std::is_same_v<T, FdelPayload>) {
          Str(w, "fdel");
          Key(w, "element");
          Str(w, PresenceName(p.element));
          Key(w, "empty");
          w.Bool(p.empty);
        }
      },
      payload);
  w.EndObject();
}

void WriteMeta(Writer& w, const Meta& m) {
  w.StartObject();
  Key(w, "SNDR");
  Str(w, m.sndr);
  Key(w, "SEQN");
  Str(w, m.seqn);
  Key(w, "seqn_number");
  if (m.seqn_number) {
    w.Int64(*m.seqn_number);
  } else {
    w.Null();
  }
  Key(w, "DTTM");
  Str(w, m.dttm);
  Key(w, "dttm_utc");
  Str(w, FormatUtc(m.dttm_utc_micros));
  Key(w, "TYPE");
  Str(w, m.type);
  Key(w, "STYP");
  Str(w, m.styp);
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
    Key(w, "FLID");
    Str(w, r.flid);
    Key(w, "FFID");
    Text(w, r.ffid);
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
  Key(w, "RECS");
  Int(w, b.recs);
  Key(w, "recs_mismatch");
  w.Bool(b.recs_mismatch);
  if (b.seasonal) {
    Key(w, "SNAM");
    Text(w, b.snam);
    Key(w, "APCD");
    Text(w, b.apcd);
    Key(w, "SDAT");
    Time(w, b.sdat);
    Key(w, "EDAT");
    Time(w, b.edat);
  }
  Key(w, "records");
  w.StartArray();
  for (const ScheduleRecord& r : b.records) {
    w.StartObject();
    Key(w, "index");
    w.Int(r.index);
    Key(w, "FLID");
    Text(w, r.flid);
    Key(w, "SODT");
    Time(w, r.sodt);
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
  Key(w, "type");
  Str(w, b.type);
  Key(w, "RECS");
  Int(w, b.recs);
  Key(w, "recs_mismatch");
  w.Bool(b.recs_mismatch);
  Key(w, "records");
  w.StartArray();
  for (const ReferenceRecord& r : b.records) {
    w.StartObject();
    Key(w, "index");
    w.Int(r.index);
    Key(w, "key_name");
    Str(w, r.key_name);
    Key(w, "key");
    Str(w, r.key);
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
  Key(w, "class");
  Str(w, ErrorClassName(status.error_class()));
  Key(w, "error");
  Str(w, status.message());
  w.EndObject();
  return std::string(sb.GetString(), sb.GetSize());
}

}  // namespace msgx::sis
