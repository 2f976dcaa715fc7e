// MailboxWriter: writes the bench's traffic into the mailbox as an upstream
// AODB would (docs/performance.md#msgx-bench), at an offered rate kept by
// its own clock.
//
// The mailbox is either kind msgx captures from (tools/bench_mailbox.h).
// Shape: one multi-row INSERT per transaction, a transaction every 20 ms
// carrying rate / 50 rows (at least 1, so below 50 msg/s one row per
// transaction, at 1k msg/s 20 rows, at 50k msg/s 1,000), VALID rows received now (in
// mailbox.time-zone) and the subsystem columns from META, as `msgx dev load` writes them. A
// transaction whose slot has passed is sent at once (no sleep), so a writer that falls behind
// writes back to back and the step's accepted rows/s shows it.
//
// Each committed row is reported with its mailbox id and the steady_clock
// time right after COMMIT returned. Between transactions `between()` is
// called, so the caller can read the Kafka consumer on the same thread.
//
// Thread-safety: one thread drives one instance.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/result.h"
#include "codecs/time_zone.h"
#include "tools/bench_mailbox.h"
#include "tools/bench_traffic.h"

namespace msgx::app {

struct WriteStats {
  std::int64_t rows = 0;
  std::int64_t transactions = 0;
  double seconds = 0;  // first transaction's start to the last commit
  double rows_per_second() const { return seconds > 0 ? static_cast<double>(rows) / seconds : 0; }
};

class MailboxWriter {
 public:
  using OnCommit = std::function<void(std::int64_t mailbox_id, TrafficKind kind,
                                      std::chrono::steady_clock::time_point at)>;

  static Result<std::unique_ptr<MailboxWriter>> Open(const Config& config);
  ~MailboxWriter();

  // The largest SEQN in the mailbox, for the generator's first (kInfra).
  Result<int> MaxSeqn() { return mailbox_->MaxSeqn(); }
  // "PostgreSQL" or "MariaDB".
  const char* mailbox_kind() const { return mailbox_->kind(); }
  // Writes `msgs` in one transaction.
  Status WriteNow(const std::vector<TrafficMessage>& msgs, const OnCommit& on_commit);
  // Writes generator traffic at `rate` rows/s for `duration`.
  Result<WriteStats> WriteAt(double rate, std::chrono::duration<double> duration,
                             TrafficGenerator& gen, const TimeZone& zone, const OnCommit& on_commit,
                             const std::function<void()>& between);

 private:
  MailboxWriter() = default;
  Status Insert(const std::vector<TrafficMessage>& msgs, const OnCommit& on_commit);

  std::unique_ptr<BenchMailbox> mailbox_;
};

}  // namespace msgx::app
