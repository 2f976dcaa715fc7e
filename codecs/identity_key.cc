#include "codecs/identity_key.h"

#include <cstdint>

namespace msgx::sis {

std::string MetaIdentityKey(const Meta& meta, bool include_day_boundary) {
  std::string key;
  key.reserve(meta.sndr.size() + meta.type.size() + meta.styp.size() + meta.seqn.size() + 12);
  key += meta.sndr;
  key += '|';
  key += meta.type;
  key += '|';
  key += meta.styp;
  key += '|';
  key += meta.seqn;
  if (include_day_boundary) {
    key += '|';
    key += meta.dttm.substr(0, 8);
  }
  return BoundKey(key);
}

std::string BoundKey(std::string_view key, std::size_t max_chars) {
  if (key.size() <= max_chars) return std::string(key);
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  std::size_t cut = max_chars - 17;
  while (cut > 0 && (static_cast<unsigned char>(key[cut]) & 0xC0) == 0x80) --cut;
  std::string out(key.substr(0, cut));
  out += '#';
  static constexpr char kHex[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) out += kHex[(h >> shift) & 0xF];
  return out;
}

}  // namespace msgx::sis
