// HeadRetry: seed mode's waiting (docs/fold.md#seed-mode, issue 4), outside
// the fold and under an injected clock.
//
// With pipeline.retry-deterministic: true, a message whose decision is a
// deterministic failure does not go DEAD at once: it becomes FAILED and holds
// the head (strict log order: nothing behind it is applied). The fold stops
// before it; HeadRetry says when to decide it again:
//   attempt n failed  → wait BackoffDelay(n) (1, 2, 4, 8, 16 s…, each capped
//                       at backoff-cap), then retry;
//   attempts reach max-attempts, or head-deadline has passed since the
//   message first became head → exhaust: the caller appends an EXHAUST log
//   command, and the fold then ends the message DEAD, error_class
//   EXHAUSTED. A re-fold reads that command and never waits.
// The head's state (offset, first-head time, attempts) is kept in a small
// file so that a restart continues the count and the deadline instead of
// starting over.
//
// Thread-safety: one thread (the fold's driver).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"

namespace msgx {

struct HeadVerdict {
  enum class Kind { kWait, kRetryNow, kExhaust };
  Kind kind = Kind::kRetryNow;
  MicrosSinceEpoch retry_at = 0;   // kWait: when to decide it again
  int attempts = 0;                // failed attempts so far
  MicrosSinceEpoch failed_at = 0;  // this failure, by the clock
  std::string reason;              // kExhaust: "max-attempts 5" or "head-deadline 10m"
};

class HeadRetry {
 public:
  // `state_path` persists the head; empty keeps it in memory only (tests).
  HeadRetry(const PipelineConfig& config, Clock* clock, std::string state_path = "");

  // The head at log `offset` just failed again (or for the first time).
  // Returns what to do next.
  HeadVerdict Failed(std::int64_t offset);
  // Whether the head may be decided again now (its backoff has passed).
  bool Due(std::int64_t offset) const;
  // The head moved past `offset` (it succeeded, or was exhausted).
  void Cleared(std::int64_t offset);

  std::optional<std::int64_t> head() const;
  // When the head may be decided again (0: at once).
  MicrosSinceEpoch retry_at() const { return retry_at_; }
  int attempts() const { return attempts_; }

 private:
  void Load();
  void Save() const;

  PipelineConfig config_;
  Clock* clock_;
  std::string state_path_;
  std::int64_t offset_ = -1;
  MicrosSinceEpoch first_head_ = 0;
  MicrosSinceEpoch retry_at_ = 0;
  int attempts_ = 0;
};

}  // namespace msgx
