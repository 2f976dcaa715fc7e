// Capture: copies mailbox rows into the log, in mailbox-id order, without
// ever losing one (docs/capture.md#the-gap-rule, docs/capture.md#late-rows).
//
// Mailbox ids are allocated before commit, so a reader can see id 7 before
// id 6 commits, and a rolled-back id never appears. Capture therefore waits
// at a gap (id N+1 missing while a higher id is visible):
//   - When the gap is first seen, it remembers the transactions in progress
//     (Mailbox::InProgressTransactions; when the mailbox cannot tell yet, it
//     asks again at each poll until it can). Once all of them have ended,
//     and the ids are still missing on a read made after that check, the
//     gap is permanent (a rollback) and is skipped at once.
//   - A mailbox without transaction status but with a gap probe (MariaDB
//     without PROCESS, Mailbox::ProbeGap) is probed at every poll that
//     shows the gap: held -> wait, a committed row -> read again, free (no
//     row, committed or not) -> skipped at once. With transaction status
//     too (MariaDB with PROCESS), a gap whose transactions have ended is
//     also probed before it is skipped.
//   - capture.max-commit-delay, measured on the injected Clock's monotonic
//     reading, bounds every wait (an idle transaction elsewhere, a source
//     without transaction status, an id taken before its transaction had an
//     xid).
//   - Skipped ids are persisted as ranges with the watermark, in the same
//     WriteBatch as the records (LogStore::Append). Every poll re-reads them;
//     a row that appears is appended at the end of the log, marked late, and
//     counted. After `skipped_retention` a range is aged out: moved to the
//     aged-out list in the log store (kept for audit) and logged at WARN.
//   - capture.start-after-id sets the watermark on the log's first capture
//     only; afterwards the persisted watermark rules.
//
// Poll() does one step and returns what it did; the caller loops: again at
// once while PollOutcome::more, otherwise after pipeline.poll-interval.
// An outage of the mailbox or the disk is a kInfra Status from Poll() with
// nothing changed; the next Poll() retries.
//
// Thread-safety: one thread drives a Capture. The LogStore may be shared
// with other appenders (command intake).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "state/log_store.h"
#include "stream/capture/mailbox.h"

namespace msgx {

struct CaptureOptions {
  int batch_max = 1000;                            // pipeline.batch-max
  Millis max_commit_delay{5 * 60'000};             // capture.max-commit-delay
  std::int64_t start_after_id = 0;                 // capture.start-after-id
  Millis skipped_retention{7LL * 24 * 3'600'000};  // age-out horizon (docs/capture.md)

  static CaptureOptions FromConfig(const Config& config);
};

// What one Poll() did.
struct PollOutcome {
  int appended = 0;              // rows appended in id order
  int late = 0;                  // rows appended late (their gap had been skipped)
  std::int64_t skipped_ids = 0;  // ids passed over at gaps
  int aged_out = 0;              // skipped ranges no longer re-checked
  // The first missing id capture is waiting for, if it is waiting at a gap.
  std::optional<std::int64_t> waiting_at;
  // Poll again at once: a batch came back full, or a gap filled meanwhile.
  bool more = false;
};

// Counters since this Capture was created, for /metrics.
struct CaptureStats {
  std::int64_t appended = 0;
  std::int64_t late = 0;
  std::int64_t skipped_by_transactions = 0;  // ids
  std::int64_t skipped_by_delay = 0;         // ids
  std::int64_t aged_out = 0;                 // ranges
};

class Capture {
 public:
  // Loads the capture progress from `log`; on the log's first capture,
  // persists watermark = options.start_after_id.
  // REQUIRES: log, mailbox and clock outlive the Capture.
  static Result<std::unique_ptr<Capture>> Create(LogStore* log, Mailbox* mailbox, Clock* clock,
                                                 CaptureOptions options);
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;

  Result<PollOutcome> Poll();

  // Mailbox ids above the watermark now (the mailbox's highest id minus
  // the watermark, at least 0): the rows capture has still to pass. kInfra
  // when the mailbox cannot be read.
  Result<std::int64_t> Backlog();

  const CaptureProgress& progress() const { return progress_; }
  const CaptureStats& stats() const { return stats_; }

 private:
  // A gap capture is waiting at: first missing id and what was known then.
  struct Gap {
    std::int64_t first = 0;
    std::int64_t seen_at = 0;                   // Clock::MonotonicMicros()
    std::optional<TransactionIds> in_progress;  // nullopt: not known yet
    bool by_transactions = false;               // the rule this gap started with
  };
  enum class GapDecision { kWait, kSkipEnded, kSkipDelay, kReread };
  // The gap probe's decision about [first, last] (Mailbox::ProbeGap):
  // free -> skip, committed -> re-read, held -> wait; a mailbox without a
  // probe -> `unsupported`.
  Result<GapDecision> Probe(std::int64_t first, std::int64_t last, GapDecision unsupported);
  // Takes the transactions in progress for gap_ ([first, last]) and decides:
  // wait while the mailbox cannot tell yet or one has not ended; once all
  // have, read the gap again (kReread if a row is there) and probe it.
  Result<GapDecision> AskTransactions(std::int64_t first, std::int64_t last);

  Capture(LogStore* log, Mailbox* mailbox, Clock* clock, CaptureOptions options,
          CaptureProgress progress);
  // Re-reads skipped ranges into late records; ages out old ranges.
  Status RecheckSkipped(CaptureProgress* next, std::vector<LogRecordData>* records,
                        PollOutcome* out);
  // Decides about the gap [first, last] (last + 1 is visible).
  // `ended_before_read`: the pending gap's transactions had all ended before
  // the read that still shows the gap.
  Result<GapDecision> DecideGap(std::int64_t first, std::int64_t last, bool ended_before_read);

  LogStore* const log_;
  Mailbox* const mailbox_;
  Clock* const clock_;
  const CaptureOptions options_;
  CaptureProgress progress_;  // as persisted
  std::optional<Gap> gap_;
  CaptureStats stats_;
  // The steady clock when the mailbox server's clock was last read into the
  // log (LogStore::ObserveReferenceClock); -1: not yet.
  std::int64_t reference_read_mono_ = -1;
};

}  // namespace msgx
