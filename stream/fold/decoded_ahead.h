// DecodedAhead: a message decoded before the fold reaches it, off the fold's
// thread (stream/fold/read_ahead.h). It holds what Fold::DecideMessage would
// first compute from the raw bytes alone: META, the body unless an ignore
// rule matches, and the body hash. Decoding is a pure function of the bytes
// and the decision settings (docs/fold.md#determinism), so a fold whose
// settings in force are the same ones uses it in place of decoding; the
// settings it was made with travel with it so that the fold can tell
// (docs/fold.md#decoding-ahead).
//
// Thread-safety: immutable once made; handed from the read-ahead thread to
// the fold's through a queue.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "codecs/sis_message.h"
#include "stream/fold/active_settings.h"

namespace msgx {

struct DecodedAhead {
  // The settings in force at the message's offset, which decoded it.
  std::shared_ptr<const ActiveSettings> settings;
  std::optional<Result<sis::Meta>> meta;  // always set
  // Set when META decoded and no ignore rule matched.
  std::optional<Result<sis::DecodedMessage>> body;
  std::string body_hash;  // BodyHash(raw) (stream/fold/identity.h), with a body
};

// Decodes `raw` as the fold would with `settings`.
// REQUIRES: settings non-null.
std::shared_ptr<const DecodedAhead> DecodeAhead(std::shared_ptr<const ActiveSettings> settings,
                                                std::string_view raw);

}  // namespace msgx
