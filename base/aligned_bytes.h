// AlignedBytes: bytes at an address FlatBuffers may read in place.
//
// FlatBuffers reads a buffer's scalars where they lie (a uint32 offset, an
// int64 field), so the buffer's first byte must be aligned for the widest
// scalar it holds: 8 bytes for msgx's schemas. A std::string's own bytes
// always are (operator new's 16, or, for a short string, the 8-aligned
// string object itself); a RocksDB value read through an iterator lies
// wherever its block put it, and reading a flatbuffer there is undefined
// behaviour (UBSan: "load of misaligned address";
// docs/testing.md#sanitizer-builds). Callers that verify or read a
// flatbuffer from bytes they did not allocate pass them through here.
//
// Thread-safety: a free function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace msgx {

inline constexpr std::size_t kFlatbufferAlignment = 8;

// Whether `bytes` starts on a kFlatbufferAlignment boundary.
inline bool IsFlatbufferAligned(std::string_view bytes) {
  return reinterpret_cast<std::uintptr_t>(bytes.data()) % kFlatbufferAlignment == 0;
}

// `bytes` itself when IsFlatbufferAligned, else a copy of it in *storage.
// The result is valid while the bytes it views are: `bytes`, or *storage
// until it changes.
inline std::string_view AlignedBytes(std::string_view bytes, std::string* storage) {
  if (IsFlatbufferAligned(bytes)) return bytes;
  storage->assign(bytes);
  return *storage;
}

}  // namespace msgx
