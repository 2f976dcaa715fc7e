// Integers as big-endian bytes (most significant first): the form in which
// RocksDB's bytewise keys sort numbers (docs/capture.md, docs/fold.md) and PostgreSQL's
// binary format sends them (docs/schema.md#how-the-applier-sends-rows). The
// one encoder and decoder of the tree: the state store's and the log's
// keys, the applier's binary arrays and the TZif reader all call it. Pure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace msgx {

// Appends v's 4 bytes to *out.
inline void AppendBigEndian32(std::string* out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out->append(b, sizeof b);
}

// Appends v's 8 bytes to *out.
inline void AppendBigEndian64(std::string* out, std::uint64_t v) {
  AppendBigEndian32(out, static_cast<std::uint32_t>(v >> 32));
  AppendBigEndian32(out, static_cast<std::uint32_t>(v));
}

// Overwrites (*out)[at, at + 4) with v's 4 bytes.
// REQUIRES: at + 4 <= out->size().
inline void StoreBigEndian32(std::string* out, std::size_t at, std::uint32_t v) {
  (*out)[at] = static_cast<char>(v >> 24);
  (*out)[at + 1] = static_cast<char>(v >> 16);
  (*out)[at + 2] = static_cast<char>(v >> 8);
  (*out)[at + 3] = static_cast<char>(v);
}

// v's 8 bytes, as a string of its own (a key, a small value).
inline std::string BigEndian64(std::uint64_t v) {
  std::string out;
  out.reserve(8);
  AppendBigEndian64(&out, v);
  return out;
}

// The number in b's first 4 bytes. Of a shorter b, the number its bytes
// spell.
inline std::uint32_t ReadBigEndian32(std::string_view b) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4 && i < b.size(); ++i) {
    v = (v << 8) | static_cast<unsigned char>(b[i]);
  }
  return v;
}

// The number in b's first 8 bytes. Of a shorter b, the number its bytes
// spell (callers check a stored value's size where it matters).
inline std::uint64_t ReadBigEndian64(std::string_view b) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8 && i < b.size(); ++i) {
    v = (v << 8) | static_cast<unsigned char>(b[i]);
  }
  return v;
}

}  // namespace msgx
