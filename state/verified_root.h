// VerifiedRoot: the root table of a stored flatbuffer, verified first.
//
// The state store's values, the pending batches and the log's records are
// flatbuffers read back from RocksDB, whose values may lie at any address.
// FlatBuffers reads in place and needs the buffer aligned, so the bytes
// are taken from an aligned copy when they are not (base/aligned_bytes.h).
// The codec's cached decode (codecs/sis_flatbuffer.cc) verifies with its
// own depth and table bounds, so it keeps its own verifier.
//
// Thread-safety: a free function.
#pragma once

#include <flatbuffers/flatbuffers.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "base/aligned_bytes.h"

namespace msgx {

// The root of `bytes` (or of their copy in *storage) when they verify as a
// T with `identifier` (nullptr: the schema has none); null when they do not.
// The root is valid while the bytes it lies in are. `storage` may be null
// only for bytes known to be aligned (IsFlatbufferAligned).
template <typename T>
const T* VerifiedRoot(std::string_view bytes, std::string* storage,
                      const char* identifier = nullptr) {
  bytes = AlignedBytes(bytes, storage);
  flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
  if (!v.VerifyBuffer<T>(identifier)) return nullptr;
  return flatbuffers::GetRoot<T>(bytes.data());
}

}  // namespace msgx
