// The dedupe identity of a message (docs/fold.md#identity; the bound:
// docs/schema.md#bounded-values).
//
// MetaIdentityKey(meta) = SNDR|TYPE|STYP|SEQN, plus |yyyyMMdd of DTTM when
// include_day_boundary (msgx.identity.include-day-boundary). Wrap epochs
// are added by the fold, not here. The key is bounded by BoundKey().
//
// Pure; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "codecs/sis_message.h"

namespace msgx::sis {

// proc_state.identity_key is VARCHAR(200).
inline constexpr std::size_t kMaxIdentityKeyChars = 200;
// A FLID is the flight's key in the state store, Redis, the Kafka key and
// flight_hst.flid (VARCHAR(64)); a reference record's key is ref_master.rkey
// (VARCHAR(200)). The decoder bounds both with BoundKey, so one bounded key
// is used everywhere the fold writes it (docs/schema.md#bounded-values).
inline constexpr std::size_t kMaxFlidChars = 64;
inline constexpr std::size_t kMaxReferenceKeyChars = 200;

// The key from META alone, before the fold adds a wrap epoch
// (stream/fold/identity.h, EpochIdentityKey).
std::string MetaIdentityKey(const Meta& meta, bool include_day_boundary);

// Keys up to max_chars bytes are returned unchanged. Longer ones become the
// first (max_chars - 17) bytes, cut back to a UTF-8 character boundary,
// + "#" + 16 lower-case hex digits of the FNV-1a 64-bit hash of the whole
// key. Deterministic across runs, machines and builds. The result is at most
// max_chars bytes (so also at most max_chars characters).
// REQUIRES: max_chars > 17.
std::string BoundKey(std::string_view key, std::size_t max_chars = kMaxIdentityKeyChars);

}  // namespace msgx::sis
