// Message identity (docs/fold.md#identity, including SEQN wraps).
//
// key = SNDR|TYPE|STYP|SEQN [|yyyyMMdd of DTTM] [#e<epoch> when epoch > 0]
//
// Wrap epochs, per sender, over the numeric SEQN (six digits, 0..999999):
//   - a drop of more than half the range (500000) from the sender's last
//     SEQN starts a new epoch;
//   - a rise of more than half the range while in epoch e > 0 is a late
//     message of the previous epoch: it takes e-1 and leaves the tracker
//     alone;
//   - otherwise the message takes the current epoch and becomes the last.
// A non-numeric SEQN has no epoch tracking.
//
// The base key and the 200-byte bound (prefix + "#" + FNV-1a hash) are the
// codec's (codecs/identity_key.h), so `msgx decode` and the fold agree.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string>

#include "codecs/sis_message.h"
#include "state/outcome.h"

namespace msgx {

inline constexpr std::int64_t kSeqnRange = 1'000'000;

struct EpochStep {
  std::int32_t epoch = 0;
  std::optional<SenderSeqn> update;  // new tracker state, when it changes
};
// The epoch of `seqn` given the sender's tracker (nullopt: first message).
EpochStep NextEpoch(const std::optional<SenderSeqn>& tracker, std::int64_t seqn);

// The fold's identity key: the codec's MetaIdentityKey plus "#e<epoch>" when
// epoch > 0, bounded to proc_state.identity_key's width.
std::string EpochIdentityKey(const sis::Meta& meta, bool include_day_boundary, std::int32_t epoch);

// The hash that tells whether two messages with one identity differ: the
// SHA-256 of the raw bytes without the <META>…</META> element.
std::string BodyHash(std::string_view raw);

}  // namespace msgx
