// Mailbox: the seam between capture and the upstream mailbox table
// (`cminmsgs`, someone else's database). Capture needs only what is here;
// an adapter per database type implements it (PgMailbox for PostgreSQL).
//
// Contract for implementations:
//   - read-only: SELECTs only, never DDL, never a write
//     (docs/capture.md#the-mailbox-is-not-ours);
//   - every failure of the database or driver is a kInfra Status (an outage
//     that capture waits out), never an exception;
//   - rows come back in ascending id order, message text exactly as the
//     driver returns it (UTF-8), never decoded or trimmed.
//
// Thread-safety: an implementation is used by one capture thread.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"

namespace msgx {

struct MailboxRow {
  std::int64_t id = 0;
  std::string message;                          // the raw text column
  std::optional<MicrosSinceEpoch> received_at;  // the received column, if not null
};

// An inclusive range of ids.
struct IdRange {
  std::int64_t first = 0;
  std::int64_t last = 0;
};

// Transaction ids (PostgreSQL xid8) that were in progress at one moment.
using TransactionIds = std::vector<std::uint64_t>;

class Mailbox {
 public:
  virtual ~Mailbox() = default;

  // Up to `limit` rows with id > after, ascending.
  virtual Status ReadAfter(std::int64_t after, int limit, std::vector<MailboxRow>* out) = 0;

  // Up to `limit` rows whose id lies in one of `ranges`, ascending.
  virtual Status ReadRanges(std::span<const IdRange> ranges, int limit,
                            std::vector<MailboxRow>* out) = 0;

  // Whether InProgressTransactions/AllEnded work (PostgreSQL: yes; a source
  // without transaction status: no, and capture relies on
  // capture.max-commit-delay alone).
  virtual bool SupportsTransactionStatus() const = 0;

  // The transactions in progress now, cluster-wide (pg_current_snapshot()'s
  // xip list). REQUIRES: SupportsTransactionStatus().
  virtual Result<TransactionIds> InProgressTransactions() = 0;

  // True when every one of `txns` has ended, committed or aborted, such
  // that a read started after this call sees the rows of the committed
  // ones. REQUIRES: SupportsTransactionStatus(); txns come from
  // InProgressTransactions().
  virtual Result<bool> AllEnded(const TransactionIds& txns) = 0;

  // The database server's clock now, which bounds this host's clock in the
  // log's append times (LogStore::ObserveReferenceClock,
  // docs/fold.md#the-folds-clock).
  virtual Result<MicrosSinceEpoch> ServerNow() = 0;

  // The highest id visible now; 0 when the table is empty.
  virtual Result<std::int64_t> MaxId() = 0;
};

}  // namespace msgx
