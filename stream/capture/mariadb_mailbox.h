// MariaDbMailbox: the Mailbox on MariaDB or MySQL (InnoDB), through
// MariaDbSession (libmariadb). Chosen by mailbox.url's scheme, mysql:// or
// mariadb:// (MakeMailbox, stream/capture/mailbox_factory.h).
//
// Only SELECTs are issued, in a READ ONLY, READ COMMITTED, autocommit
// session (MariaDbSession): of the mailbox table and, for the gap rule
// (docs/capture.md#the-gap-rule-on-mariadb), of
// information_schema.INNODB_TRX when the account has PROCESS.
//
// The gap rule depends on the account's privileges, learnt at the first
// connection and kept for the life of the process:
//   - with PROCESS: SupportsTransactionStatus() is true and
//     InProgressTransactions/AllEnded read INNODB_TRX (every transaction
//     but this session's). INNODB_TRX is a server-wide cache that InnoDB
//     refills only when nobody has read it for 0.1 s, so a read may return
//     an older picture. InProgressTransactions opens a marker transaction
//     of its own first and answers nullopt (cannot tell yet) unless the
//     marker is in what it reads; AllEnded needs no marker (a transaction
//     absent from any later picture has ended). Neither reads INNODB_TRX
//     within kTrxCacheSpacingMicros of this mailbox's last read (it answers
//     "cannot tell yet"), so that capture's own polls never keep the cache
//     from refilling (docs/capture.md#the-gap-rule-on-mariadb);
//   - without: SupportsTransactionStatus() is false and ProbeGap probes the
//     gap with `SELECT id … WHERE id BETWEEN a AND b LIMIT 1 LOCK IN SHARE
//     MODE NOWAIT`: an uncommitted insert holds its row's lock, so the
//     probe is refused (1205/3572, kHeld); a committed row is returned
//     (kCommitted); nothing: no row exists, committed or not (kFree). The
//     probe never waits and, at READ COMMITTED in autocommit, holds its
//     shared lock only for the statement. Needs SELECT only on MariaDB;
//     MySQL 8 also wants UPDATE (the mark's column grant is enough).
//   ProbeGap also serves the PROCESS rule as a second check before a skip.
//
// received_at is the received column read as
// TIMESTAMPDIFF(MICROSECOND, '1970-01-01', column) in a session whose
// time_zone is '+00:00', made an instant by MariaDbTimeColumn: a
// TIMESTAMP's as it is, a DATETIME's wall-clock reading taken in `zone`
// (mailbox.time-zone, docs/capture.md#mailbox-time). The column's type is
// read at each connection. The connection's character set is utf8mb4.
//
// Thread-safety: one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "base/config.h"
#include "codecs/time_zone.h"
#include "stream/capture/mailbox.h"
#include "stream/mariadb/mariadb_session.h"
#include "stream/mariadb/mariadb_time.h"

namespace msgx {

class MariaDbMailbox final : public Mailbox {
 public:
  // Does not connect yet.
  // INNODB_TRX reads are spaced on `clock`'s monotonic reading, which must
  // be real time (the server's cache ages in real time); not owned.
  // `zone`: mailbox.time-zone, applied to a DATETIME received column.
  MariaDbMailbox(MariaDbUrl url, std::string table, MailboxColumns columns, const Clock* clock,
                 TimeZone zone = TimeZone::Fixed("UTC", 0));

  // At least this long between two INNODB_TRX reads of one mailbox: above
  // InnoDB's 0.1 s (CACHE_MIN_IDLE_TIME_US in trx0i_s.cc).
  static constexpr std::int64_t kTrxCacheSpacingMicros = 150'000;
  ~MariaDbMailbox() override;

  Status ReadAfter(std::int64_t after, int limit, std::vector<MailboxRow>* out) override;
  Status ReadRanges(std::span<const IdRange> ranges, int limit,
                    std::vector<MailboxRow>* out) override;
  bool SupportsTransactionStatus() const override { return has_process_.value_or(false); }
  Result<std::optional<TransactionIds>> InProgressTransactions() override;
  Result<bool> AllEnded(const TransactionIds& txns) override;
  Result<GapProbe> ProbeGap(const IdRange& range) override;
  Result<MicrosSinceEpoch> ServerNow() override;
  Result<std::int64_t> MaxId() override;

  // Whether the account's PROCESS privilege is known yet, and its value.
  std::optional<bool> has_process() const { return has_process_; }

 private:
  std::string SelectList() const;
  // Whether INNODB_TRX may be read now (kTrxCacheSpacingMicros since the
  // last read); a true answer counts as a read.
  bool TakeTrxRead();
  Status Read(std::string_view what, const std::string& sql, std::vector<MailboxRow>* out);

  const std::string table_;
  const MailboxColumns columns_;
  const Clock* const clock_;
  MariaDbSession session_;
  MariaDbTimeColumn received_;
  std::optional<bool> has_process_;
  std::optional<std::int64_t> last_trx_read_;  // clock_->MonotonicMicros()
};

}  // namespace msgx
