#include "state/flight.h"

#include <algorithm>
#include <cstring>

namespace msgx {

const Value& Record::Get(std::string_view name) const {
  static const Value kNullValue;
  auto it = fields.find(name);
  return it == fields.end() ? kNullValue : it->second;
}

std::optional<MicrosSinceEpoch> Flight::Sodt() const {
  const Value& v = data.Get("SODT");
  if (v.kind != Value::Kind::kTime) return std::nullopt;
  return v.number;
}

namespace {

// True when one of the 8 bytes of `w` is below 0x20, '"' or '\\': the
// bytes a JSON string escapes. Exact as a yes or no (the classic
// "has a byte less than n" and "has a zero byte" tricks, whose borrows can
// only mark bytes above the first match); bytes of 0x80 and above (UTF-8)
// never match.
bool NeedsEscape8(std::uint64_t w) {
  constexpr std::uint64_t kOnes = 0x0101010101010101ULL;
  constexpr std::uint64_t kHigh = 0x8080808080808080ULL;
  auto has_zero = [](std::uint64_t v) { return ((v - kOnes) & ~v & kHigh) != 0; };
  const bool control = ((w - kOnes * 0x20) & ~w & kHigh) != 0;
  return control || has_zero(w ^ (kOnes * '"')) || has_zero(w ^ (kOnes * '\\'));
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  // Runs of characters that need no escape are appended whole; eight bytes
  // at a time are checked at once, and only a word that holds a byte to
  // escape is walked byte by byte.
  std::size_t run = 0;
  std::size_t i = 0;
  const std::size_t n = s.size();
  while (i < n) {
    if (i + 8 <= n) {
      std::uint64_t w = 0;
      std::memcpy(&w, s.data() + i, sizeof w);
      if (!NeedsEscape8(w)) {
        i += 8;
        continue;
      }
    }
    for (const std::size_t end = std::min(n, i + 8); i < end; ++i) {
      const auto u = static_cast<unsigned char>(s[i]);
      if (u >= 0x20 && u != '"' && u != '\\') continue;
      out->append(s.data() + run, i - run);
      run = i + 1;
      if (u >= 0x20) {
        out->push_back('\\');
        out->push_back(static_cast<char>(u));
      } else {
        const char esc[] = {'\\', 'u', '0', '0', kHex[u >> 4], kHex[u & 0xf]};
        out->append(esc, sizeof esc);
      }
    }
  }
  out->append(s.data() + run, n - run);
  out->push_back('"');
}

void AppendValueJson(const Value& v, const AirportZone& zone, std::string* out) {
  switch (v.kind) {
    case Value::Kind::kNull:
      out->append("null");
      return;
    case Value::Kind::kText:
      AppendJsonString(v.text, out);
      return;
    case Value::Kind::kInt:
      out->append(std::to_string(v.number));
      return;
    case Value::Kind::kTime:
      // Digits, '-', ':', 'T', '.' and the sign: nothing to escape.
      out->push_back('"');
      AppendAirportIso8601(v.number, zone, out);
      out->push_back('"');
      return;
  }
}

void AppendFieldsJson(const Fields& f, const AirportZone& zone, std::string* out) {
  out->push_back('{');
  bool first = true;
  for (const auto& [name, value] : f) {
    if (!first) out->push_back(',');
    first = false;
    AppendJsonString(name, out);
    out->push_back(':');
    AppendValueJson(value, zone, out);
  }
  out->push_back('}');
}

const Entries& SharedEntries::Empty() {
  static const Entries kNone;
  return kNone;
}

Entries& SharedEntries::Mutable() {
  if (!p_) {
    p_ = std::make_shared<Node>(Entries{});
  } else if (p_.use_count() > 1) {
    p_ = std::make_shared<Node>(p_->entries);
  } else {
    p_->Forget();
  }
  return p_->entries;
}

const std::string* SharedEntries::Node::Find(Rendering rendering, std::uint64_t key) const {
  const Kept* k = kept_[static_cast<int>(rendering)].load(std::memory_order_acquire);
  return k != nullptr && k->key == key ? &k->bytes : nullptr;
}

void SharedEntries::Node::Keep(Rendering rendering, std::uint64_t key, std::string bytes) const {
  auto* k = new Kept{key, std::move(bytes)};
  Kept* none = nullptr;
  if (!kept_[static_cast<int>(rendering)].compare_exchange_strong(none, k,
                                                                  std::memory_order_acq_rel)) {
    delete k;  // another rendering is kept (the same bytes, or another key's)
  }
}

void SharedEntries::Node::Forget() {
  for (auto& slot : kept_) delete slot.exchange(nullptr, std::memory_order_acq_rel);
}

void AppendEntriesJson(const Entries& entries, const AirportZone& zone, std::string* out) {
  out->push_back('[');
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (i > 0) out->push_back(',');
    AppendFieldsJson(entries[i], zone, out);
  }
  out->push_back(']');
}

void AppendListJson(const SharedEntries& list, const AirportZone& zone, std::string* out) {
  list.AppendRendering(
      SharedEntries::Rendering::kJson, zone.id(), out,
      [&zone](const Entries& e, std::string* s) { AppendEntriesJson(e, zone, s); });
}

void AppendRecordJson(const Record& rec, const AirportZone& zone, std::string* out,
                      std::string_view extra_key, std::string_view extra_value) {
  out->push_back('{');
  bool first = true;
  bool extra_done = extra_key.empty();
  auto comma = [&] {
    if (!first) out->push_back(',');
    first = false;
  };
  auto emit_extra_before = [&](std::string_view name) {
    if (!extra_done && extra_key < name) {
      comma();
      AppendJsonString(extra_key, out);
      out->push_back(':');
      AppendJsonString(extra_value, out);
      extra_done = true;
    }
  };
  // Merge the two sorted maps.
  auto f = rec.fields.begin();
  auto l = rec.lists.begin();
  while (f != rec.fields.end() || l != rec.lists.end()) {
    const bool take_field = l == rec.lists.end() || (f != rec.fields.end() && f->first <= l->first);
    if (take_field) {
      emit_extra_before(f->first);
      comma();
      AppendJsonString(f->first, out);
      out->push_back(':');
      AppendValueJson(f->second, zone, out);
      ++f;
    } else {
      emit_extra_before(l->first);
      comma();
      AppendJsonString(l->first, out);
      out->push_back(':');
      AppendListJson(l->second, zone, out);
      ++l;
    }
  }
  if (!extra_done) {
    comma();
    AppendJsonString(extra_key, out);
    out->push_back(':');
    AppendJsonString(extra_value, out);
  }
  out->push_back('}');
}

std::string FlightJson(const Flight& flight, const AirportZone& zone) {
  std::string out;
  out.reserve(1024);  // most flights' JSON: one allocation, not a doubling series
  AppendRecordJson(flight.data, zone, &out, "FLID", flight.flid);
  return out;
}

std::string ReferenceJson(const ReferenceRecord& rec, const AirportZone& zone) {
  std::string out = "{\"fields\":";
  AppendRecordJson(rec.data, zone, &out);
  out.append(",\"key\":");
  AppendJsonString(rec.key, &out);
  out.append(",\"source\":");
  AppendJsonString(rec.source, &out);
  out.append(",\"type\":");
  AppendJsonString(rec.type, &out);
  out.push_back('}');
  return out;
}

}  // namespace msgx
