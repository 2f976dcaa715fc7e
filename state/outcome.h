// The per-message outcome the fold records (docs/fold.md#outcome-rules;
// proc_state in docs/schema.md#outcomes), and the identity-index entries
// (docs/fold.md#identity). Plain values.
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"

namespace msgx {

enum class OutcomeState : std::uint8_t { kSucceeded = 0, kSkipped, kDead };
std::string_view OutcomeStateName(OutcomeState s);  // "SUCCEEDED", ...
bool ParseOutcomeState(std::string_view name, OutcomeState* out);

// Bounds of docs/schema.md#bounded-values, enforced deterministically in
// the fold.
inline constexpr std::size_t kMaxLastError = 1000;
inline constexpr std::size_t kMaxIdentityKey = 200;

struct Outcome {
  std::int64_t mailbox_id = 0;
  OutcomeState state = OutcomeState::kSucceeded;
  std::string error_class;  // "" when none
  std::string last_error;
  std::string identity_key;
  std::int64_t log_offset = 0;  // record that decided it (replay: the command)
  std::int32_t attempts = 1;
  std::string prev_error;
  std::int64_t message_offset = 0;  // record holding the message bytes
  MicrosSinceEpoch decided_micros = 0;
  bool operator==(const Outcome&) const = default;
};

struct IdentityBinding {
  std::string key;
  std::int64_t mailbox_id = 0;
  std::string body_hash;  // 32 bytes (SHA-256)
  MicrosSinceEpoch bound_micros = 0;
  bool operator==(const IdentityBinding&) const = default;
};

struct SenderSeqn {
  std::int64_t last_seqn = 0;
  std::int32_t epoch = 0;
  bool operator==(const SenderSeqn&) const = default;
};

// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence.
std::string BoundUtf8(std::string s, std::size_t max);

}  // namespace msgx
