// DecodedMessage <-> FlatBuffers (schemas/sis_message.fbs), the cache form of
// a decode. The log keeps the raw bytes; a cached decode is only an
// optimisation, so a reader that gets an error here decodes the raw bytes
// again.
//
// ToFlatbuffer/FromFlatbuffer round-trip exactly: FromFlatbuffer(
// ToFlatbuffer(m)) has the same canonical JSON as m (tested over the corpus).
// FromFlatbuffer verifies the buffer first (bounded depth), so corrupt or
// foreign bytes give kCodecError, never a crash.
//
// Pure; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"
#include "codecs/sis_message.h"

namespace msgx::sis {

// Bumped whenever the decoder's output for the same bytes may change; a
// cached decode of another version is refused.
inline constexpr std::uint32_t kCodecVersion = 1;

std::string ToFlatbuffer(const DecodedMessage& message);

Result<DecodedMessage> FromFlatbuffer(std::string_view bytes);

}  // namespace msgx::sis
