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

// Transaction ids (PostgreSQL xid8, InnoDB trx_id) in progress at one moment.
using TransactionIds = std::vector<std::uint64_t>;

// What a probe of a gap's ids found (Mailbox::ProbeGap,
// docs/capture.md#the-gap-probe).
enum class GapProbe {
  kUnsupported,  // this mailbox has no probe: capture.max-commit-delay alone
  kHeld,         // an uncommitted insert holds a row of the range: wait
  kCommitted,    // a committed row of the range exists now: read again
  kFree,         // no row of the range exists, committed or not: skip
};

class Mailbox {
 public:
  virtual ~Mailbox() = default;

  // Up to `limit` rows with id > after, ascending.
  virtual Status ReadAfter(std::int64_t after, int limit, std::vector<MailboxRow>* out) = 0;

  // Up to `limit` rows whose id lies in one of `ranges`, ascending.
  virtual Status ReadRanges(std::span<const IdRange> ranges, int limit,
                            std::vector<MailboxRow>* out) = 0;

  // Whether InProgressTransactions/AllEnded work (PostgreSQL: yes; MariaDB:
  // when the account has PROCESS; otherwise capture asks ProbeGap, and
  // capture.max-commit-delay bounds every wait). May change from false to
  // true once (MariaDB learns its privileges at the first connection);
  // capture remembers per gap which rule it started with.
  virtual bool SupportsTransactionStatus() const = 0;

  // Probes whether ids in `range` are held by an uncommitted insert, with a
  // read that never waits for a lock. Called when !SupportsTransactionStatus(),
  // after a read that showed the gap. Default: kUnsupported.
  virtual Result<GapProbe> ProbeGap(const IdRange& range) {
    (void)range;
    return GapProbe::kUnsupported;
  }

  // The transactions in progress now, cluster-wide (pg_current_snapshot()'s
  // xip list), or nullopt when the server cannot tell yet (MariaDB: its
  // INNODB_TRX cache was not refreshed since this call began,
  // docs/capture.md#the-gap-rule-on-mariadb); the caller waits and asks
  // again at its next poll. REQUIRES: SupportsTransactionStatus().
  virtual Result<std::optional<TransactionIds>> InProgressTransactions() = 0;

  // True when every one of `txns` has ended, committed or aborted, such
  // that a read started after this call sees the rows of the committed
  // ones; false when one has not, or when the server cannot tell yet.
  // REQUIRES: SupportsTransactionStatus(); txns come from
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
