// FailedHead and FailedHeadBoard: seed mode's held head as proc_state shows
// it (docs/fold.md#seed-mode). The fold commits only terminal outcomes; the
// message that holds the head is FAILED meanwhile, with its attempts and
// when it is decided again. That state is the service's (HeadRetry, under
// the service's clock), not the log's, so it never goes through the fold:
// the fold stage posts it here, and the applier stage writes it to
// proc_state (PgApplier::ShowFailedHead) in its own fenced transaction.
//
// Thread-safety: FailedHeadBoard is thread-safe (one writer, the fold
// stage; any readers).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>

#include "base/clock.h"

namespace msgx {

struct FailedHead {
  std::int64_t mailbox_id = 0;
  std::int64_t offset = 0;  // its log record
  int attempts = 0;         // failed attempts so far
  MicrosSinceEpoch failed_at = 0;
  // When it is decided again; 0: never (it is being exhausted).
  MicrosSinceEpoch next_attempt_at = 0;
  std::string error_class;
  std::string error;
  bool operator==(const FailedHead&) const = default;
};

class FailedHeadBoard {
 public:
  void Post(FailedHead head) {
    std::lock_guard lock(mu_);
    head_ = std::move(head);
  }
  // The head moved on: its terminal outcome, from the log, replaces the
  // FAILED row.
  void Clear() {
    std::lock_guard lock(mu_);
    head_.reset();
  }
  std::optional<FailedHead> Read() const {
    std::lock_guard lock(mu_);
    return head_;
  }

 private:
  mutable std::mutex mu_;
  std::optional<FailedHead> head_;
};

}  // namespace msgx
