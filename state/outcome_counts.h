// OutcomeCounts: how many outcomes the state store holds per state, and the
// DEAD ones per error class (docs/operations.md#status, the `outcomes`
// section).
//
// The state store keeps one outcome per message for as long as it exists,
// so counting them by reading them all grows with the service's age (about
// half a second per million outcomes). The store keeps these counts
// instead, in the WriteBatch that writes the outcomes
// (state/state_store.h), and stamps them with the applied offset they are
// exact at: a reader trusts them only at the store's applied offset, and
// counts by reading otherwise (a store written by an older msgx).
//
// Encoding: be64(applied offset), then per non-zero count, in key order,
// u8 kind (0 state, 1 DEAD error class), be32 name length, the name, be64
// count.
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "base/result.h"
#include "state/outcome.h"

namespace msgx {

struct OutcomeCounts {
  std::map<std::string, std::int64_t> by_state;       // "SUCCEEDED", "SKIPPED", "DEAD"
  std::map<std::string, std::int64_t> dead_by_class;  // "MALFORMED", ...

  // Counts `o` once more (sign +1) or once less (sign -1). A count that
  // reaches 0 is dropped, so equal contents compare equal.
  void Add(const Outcome& o, int sign);
  bool operator==(const OutcomeCounts&) const = default;

  std::string Encode(std::int64_t applied_offset) const;
  struct Stamped;
  // kInternal when `bytes` does not parse.
  static Result<Stamped> Decode(std::string_view bytes);
};

struct OutcomeCounts::Stamped {
  std::int64_t applied_offset = -1;
  OutcomeCounts counts;
};

}  // namespace msgx
