// CaptureProgress: how far capture has read the mailbox, persisted in the log
// store in the same WriteBatch as the records it describes
// (docs/capture.md#what-is-persisted-and-when), so that after a crash the log
// and the watermark never disagree.
//
// Thread-safety: a value.
#pragma once

#include <cstdint>
#include <map>

#include "base/clock.h"

namespace msgx {

// Why a range of mailbox ids was passed over (docs/capture.md).
enum class SkipReason : std::uint8_t {
  // Every transaction in progress when the gap was seen has ended and the
  // ids are still missing: rolled back, almost certainly.
  kTransactionsEnded = 1,
  // capture.max-commit-delay passed while waiting at the gap.
  kCommitDelay = 2,
};

// Inclusive range [first, last] of mailbox ids that capture passed over.
struct SkippedRange {
  std::int64_t first = 0;
  std::int64_t last = 0;
  MicrosSinceEpoch skipped_at = 0;  // wall clock when skipped
  SkipReason reason = SkipReason::kTransactionsEnded;
  MicrosSinceEpoch aged_out_at = 0;  // 0 while still re-checked
  bool operator==(const SkippedRange&) const = default;
};

struct CaptureProgress {
  // Every mailbox id <= watermark is in the log, or in `skipped`, or in
  // `aged_out`, or at or below the cut-over id (capture.start-after-id).
  std::int64_t watermark = 0;
  // Ranges still re-checked on every poll, keyed by first id. A row that
  // appears in one is captured late and its id is removed from the range.
  std::map<std::int64_t, SkippedRange> skipped;
  // Ranges that stopped being re-checked (the age-out horizon passed), keyed
  // by first id. The log store keeps every recorded one for audit and never
  // removes it; in memory, capture holds only those aged out since its last
  // append (LogStore::Append records them), so a poll's work does not grow
  // with the log's age.
  std::map<std::int64_t, SkippedRange> aged_out;
  // Rows captured late, in total over the life of the log.
  std::int64_t late_captured = 0;

  bool operator==(const CaptureProgress&) const = default;
};

}  // namespace msgx
