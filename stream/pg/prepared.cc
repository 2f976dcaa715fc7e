#include "stream/pg/prepared.h"

#include <cstdint>

namespace msgx {

std::string PreparedName(std::string_view sql) {
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (const char c : sql) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string name = "msgx_";
  for (int shift = 60; shift >= 0; shift -= 4) name += kHex[(h >> shift) & 0xf];
  return name;
}

}  // namespace msgx
