#include "state/compact_flight.h"

#include <cstdint>
#include <utility>

namespace msgx {
namespace {

constexpr std::string_view kMagic(
    "\xFF"
    "MF\x01",
    4);

void PutVarint(std::uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutSigned(std::int64_t v, std::string* out) {
  PutVarint((static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63), out);
}

void PutString(std::string_view s, std::string* out) {
  PutVarint(s.size(), out);
  out->append(s);
}

void PutFields(const Fields& fields, std::string* out) {
  PutVarint(fields.size(), out);
  for (const auto& [name, v] : fields) {
    PutString(name, out);
    out->push_back(static_cast<char>(v.kind));
    switch (v.kind) {
      case Value::Kind::kText:
        PutString(v.text, out);
        break;
      case Value::Kind::kInt:
      case Value::Kind::kTime:
        PutSigned(v.number, out);
        break;
      case Value::Kind::kNull:
        break;
    }
  }
}

// Reads the layout of compact_flight.h from a string_view; every read
// checks the bounds, and the first failure sticks (Good() turns false and
// every later read yields zero values).
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  bool Good() const { return ok_; }
  bool AtEnd() const { return pos_ == in_.size(); }

  std::uint64_t Varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64 && ok_; shift += 7) {
      if (pos_ >= in_.size()) break;
      const auto b = static_cast<std::uint8_t>(in_[pos_++]);
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) return v;
    }
    ok_ = false;
    return 0;
  }
  std::int64_t Signed() {
    const std::uint64_t z = Varint();
    return static_cast<std::int64_t>(z >> 1) ^ -static_cast<std::int64_t>(z & 1);
  }
  std::string_view String() {
    const std::uint64_t n = Varint();
    if (!ok_ || n > in_.size() - pos_) {
      ok_ = false;
      return {};
    }
    std::string_view s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }
  std::uint8_t Byte() {
    if (pos_ >= in_.size()) {
      ok_ = false;
      return 0;
    }
    return static_cast<std::uint8_t>(in_[pos_++]);
  }
  // A count of items of at least `min_bytes` each: more than the bytes left
  // could hold is corrupt (and would make reserve() huge).
  std::size_t Count(std::size_t min_bytes) {
    const std::uint64_t n = Varint();
    if (!ok_ || n > (in_.size() - pos_) / min_bytes) {
      ok_ = false;
      return 0;
    }
    return static_cast<std::size_t>(n);
  }
  void Fail() { ok_ = false; }

 private:
  std::string_view in_;
  std::size_t pos_ = 0;
  bool ok_ = true;
};

// One field's name and value; kind > 3 fails the reader.
std::pair<std::string_view, Value> ReadField(Reader* r) {
  std::pair<std::string_view, Value> out;
  out.first = r->String();
  const std::uint8_t kind = r->Byte();
  if (kind > static_cast<std::uint8_t>(Value::Kind::kTime)) {
    r->Fail();
    return out;
  }
  out.second.kind = static_cast<Value::Kind>(kind);
  if (out.second.kind == Value::Kind::kText) {
    out.second.text = r->String();
  } else if (out.second.kind != Value::Kind::kNull) {
    out.second.number = r->Signed();
  }
  return out;
}

// Names must come in strictly increasing order, as they are written: a
// repeated or unsorted name is corrupt.
void ReadFields(Reader* r, Fields* out) {
  const std::size_t n = r->Count(2);  // an empty name and a null kind
  out->reserve(n);
  for (std::size_t i = 0; i < n && r->Good(); ++i) {
    auto [name, value] = ReadField(r);
    if (i > 0 && name <= (out->end() - 1)->first) r->Fail();
    if (r->Good()) out->emplace(name, std::move(value));
  }
}

Status Corrupt() { return Status::Internal("state: compact flight record is malformed"); }

}  // namespace

bool IsCompactFlight(std::string_view bytes) { return bytes.starts_with(kMagic); }

std::string EncodeCompactFlight(const Flight& f) {
  std::string out;
  out.reserve(1024);
  out.append(kMagic);
  PutSigned(f.version, &out);
  PutString(f.flid, &out);
  PutFields(f.data.fields, &out);
  PutVarint(f.data.lists.size(), &out);
  for (const auto& [name, entries] : f.data.lists) {
    PutString(name, &out);
    // Zone-free: every compact rendering is kept under key 0.
    entries.AppendRendering(SharedEntries::Rendering::kCompact, 0, &out,
                            [](const Entries& list, std::string* s) {
                              PutVarint(list.size(), s);
                              for (const Fields& e : list) PutFields(e, s);
                            });
  }
  return out;
}

Result<Flight> DecodeCompactFlight(std::string_view bytes) {
  if (!IsCompactFlight(bytes)) return Corrupt();
  Reader r(bytes.substr(kMagic.size()));
  Flight f;
  f.version = r.Signed();
  f.flid = r.String();
  ReadFields(&r, &f.data.fields);
  const std::size_t lists = r.Count(2);  // an empty name and no entries
  f.data.lists.reserve(lists);
  for (std::size_t i = 0; i < lists && r.Good(); ++i) {
    const std::string_view name = r.String();
    if (i > 0 && name <= (f.data.lists.end() - 1)->first) r.Fail();
    const std::size_t n = r.Count(1);  // an entry of no fields
    Entries entries;
    entries.reserve(n);
    for (std::size_t j = 0; j < n && r.Good(); ++j) ReadFields(&r, &entries.emplace_back());
    if (r.Good()) f.data.lists.emplace(name, std::move(entries));
  }
  if (!r.Good() || !r.AtEnd()) return Corrupt();
  return f;
}

Result<std::optional<MicrosSinceEpoch>> CompactFlightSodt(std::string_view bytes) {
  if (!IsCompactFlight(bytes)) return Corrupt();
  Reader r(bytes.substr(kMagic.size()));
  r.Signed();
  r.String();
  const std::size_t n = r.Count(2);
  for (std::size_t i = 0; i < n && r.Good(); ++i) {
    auto [name, value] = ReadField(&r);
    if (!r.Good() || name < "SODT") continue;
    if (name == "SODT" && value.kind == Value::Kind::kTime) {
      return std::optional<MicrosSinceEpoch>(value.number);
    }
    break;  // sorted: past where SODT would be
  }
  if (!r.Good()) return Corrupt();
  return std::optional<MicrosSinceEpoch>();
}

}  // namespace msgx
