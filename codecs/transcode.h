// Turning a message's bytes into UTF-8 before XML parsing
// (docs/codec.md#encoding-rules: the encoding follows where the bytes came
// from).
//
//   kUnicodeText  text from the mailbox's text column: the database driver
//                 already produced Unicode (UTF-8 here), so the prolog's
//                 encoding= is ignored. A UTF-8 BOM is dropped.
//   kRawBytes     bytes from a file or an HTTP body: a BOM decides (UTF-8,
//                 UTF-16LE/BE); otherwise the prolog's encoding= (default
//                 UTF-8). Anything but UTF-8 is transcoded with glibc iconv.
//
// Classification: an encoding iconv cannot open is CODEC_ERROR (a capability
// of the codec, replayable); bytes invalid for the encoding are MALFORMED
// with the byte offset. The result is always valid UTF-8.
//
// Pure apart from iconv's own (thread-safe, per-call) descriptor; safe to
// call from many threads.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"

namespace msgx::sis {

enum class InputOrigin {
  kUnicodeText,  // mailbox text column: ignore the prolog's encoding
  kRawBytes,     // file / HTTP body: honour BOM and prolog
};

// The encoding named in a leading `<?xml ... encoding="X"?>`, or "" when
// there is none. Looks only at the prolog (first 256 bytes, after a BOM).
std::string DeclaredEncoding(std::string_view bytes);

// Returns the offset of the first invalid UTF-8 sequence (overlongs,
// surrogates and code points over U+10FFFF count as invalid), or npos.
std::size_t FindInvalidUtf8(std::string_view s);

// Converts `bytes` (encoded as `encoding`, any iconv name) to UTF-8.
Result<std::string> TranscodeToUtf8(std::string_view bytes, std::string_view encoding);

// The whole rule above: the UTF-8 text to parse.
// `encoding_override` (e.g. a Content-Type charset) wins over the prolog
// when non-empty and origin is kRawBytes.
Result<std::string> ToUtf8(std::string_view bytes, InputOrigin origin,
                           std::string_view encoding_override = {});

}  // namespace msgx::sis
