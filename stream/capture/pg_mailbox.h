// PgMailbox: the Mailbox on PostgreSQL, through libpqxx.
//
// Table and column names come from configuration (mailbox.table and the
// column names); they are quoted as identifiers. Only SELECTs are issued:
// of the mailbox table, and of pg_current_snapshot() for the gap rule
// (docs/capture.md; "ended" is judged by snapshot membership, not by
// pg_xact_status(), see AllEnded). The session is read-only
// (default_transaction_read_only). Each call runs in its own short read-only
// statement; no transaction is held between calls.
//
// The connection is opened lazily and re-opened after a failure, so an
// outage costs one kInfra Status per call until the database is back.
//
// received_at is the received column read as
// EXTRACT(EPOCH FROM column::timestamptz) in a session whose TimeZone is
// `time_zone` (mailbox.time-zone, docs/capture.md#mailbox-time): for a
// TIMESTAMP (without time zone) column, its wall-clock reading taken in that
// zone; for TIMESTAMPTZ, the instant.
//
// Thread-safety: one thread.
#pragma once

#include <memory>
#include <pqxx/connection>
#include <string>

#include "base/config.h"
#include "stream/capture/mailbox.h"

namespace msgx {

class PgMailbox final : public Mailbox {
 public:
  // `url`: a libpq connection string (mailbox.url). Does not connect yet.
  // `time_zone`: mailbox.time-zone, a zone name PostgreSQL knows.
  PgMailbox(std::string url, std::string table, MailboxColumns columns,
            std::string time_zone = "UTC");
  static std::unique_ptr<PgMailbox> FromConfig(const Config& config);
  ~PgMailbox() override;

  Status ReadAfter(std::int64_t after, int limit, std::vector<MailboxRow>* out) override;
  Status ReadRanges(std::span<const IdRange> ranges, int limit,
                    std::vector<MailboxRow>* out) override;
  bool SupportsTransactionStatus() const override { return true; }
  Result<std::optional<TransactionIds>> InProgressTransactions() override;
  Result<bool> AllEnded(const TransactionIds& txns) override;
  Result<MicrosSinceEpoch> ServerNow() override;
  Result<std::int64_t> MaxId() override;

 private:
  // Runs `fn(connection&)`, turning every exception into kInfra and dropping
  // the connection after a failure.
  template <typename Fn>
  Status Run(const char* what, Fn&& fn);

  const std::string url_;
  const std::string table_;
  const MailboxColumns columns_;
  const std::string time_zone_;
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace msgx
