#include "state/outcome_counts.h"

#include "base/big_endian.h"

namespace msgx {

namespace {

void Bump(std::map<std::string, std::int64_t>* m, const std::string& key, int sign) {
  auto it = m->try_emplace(key, 0).first;
  it->second += sign;
  if (it->second == 0) m->erase(it);
}

void AppendAll(std::uint8_t kind, const std::map<std::string, std::int64_t>& m, std::string* out) {
  for (const auto& [name, n] : m) {
    out->push_back(static_cast<char>(kind));
    AppendBigEndian32(out, static_cast<std::uint32_t>(name.size()));
    out->append(name);
    AppendBigEndian64(out, static_cast<std::uint64_t>(n));
  }
}

}  // namespace

void OutcomeCounts::Add(const Outcome& o, int sign) {
  Bump(&by_state, std::string(OutcomeStateName(o.state)), sign);
  if (o.state == OutcomeState::kDead) Bump(&dead_by_class, o.error_class, sign);
}

std::string OutcomeCounts::Encode(std::int64_t applied_offset) const {
  std::string out = BigEndian64(static_cast<std::uint64_t>(applied_offset));
  AppendAll(0, by_state, &out);
  AppendAll(1, dead_by_class, &out);
  return out;
}

Result<OutcomeCounts::Stamped> OutcomeCounts::Decode(std::string_view bytes) {
  const auto bad = [] { return Status::Internal("state store: the outcome counts do not parse"); };
  if (bytes.size() < 8) return bad();
  Stamped s;
  s.applied_offset = static_cast<std::int64_t>(ReadBigEndian64(bytes.substr(0, 8)));
  bytes.remove_prefix(8);
  while (!bytes.empty()) {
    if (bytes.size() < 5) return bad();
    const auto kind = static_cast<std::uint8_t>(bytes[0]);
    const std::uint32_t len = ReadBigEndian32(bytes.substr(1, 4));
    bytes.remove_prefix(5);
    if (kind > 1 || bytes.size() < std::size_t{len} + 8) return bad();
    std::string name(bytes.substr(0, len));
    const auto n = static_cast<std::int64_t>(ReadBigEndian64(bytes.substr(len, 8)));
    bytes.remove_prefix(std::size_t{len} + 8);
    (kind == 0 ? s.counts.by_state : s.counts.dead_by_class)[std::move(name)] = n;
  }
  return s;
}

}  // namespace msgx
