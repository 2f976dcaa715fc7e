#include "stream/capture/mariadb_mailbox.h"

#include "stream/mariadb/mariadb_errors.h"

namespace msgx {
namespace {

// Ranges per ReadRanges statement: an OR of BETWEENs is one range scan of
// the primary key while the range optimizer's memory lasts
// (range_optimizer_max_mem_size); a few hundred stay far below it.
constexpr std::size_t kRangesPerStatement = 256;

}  // namespace

MariaDbMailbox::MariaDbMailbox(MariaDbUrl url, std::string table, MailboxColumns columns,
                               const Clock* clock, TimeZone zone)
    : table_(std::move(table)),
      columns_(std::move(columns)),
      clock_(clock),
      session_(std::move(url), MariaDbSession::Options{true, "+00:00"}),
      received_(table_, columns_.received, std::move(zone)) {
  session_.OnConnect([this](MariaDbSession& s) {
    // The received column's type, at every connection (a DDL may change it).
    if (Status t = received_.Learn(s); !t.ok()) return t;
    if (has_process_) return Status::Ok();  // learnt once, kept for the process
    unsigned int code = 0;
    // Without a WHERE: the server checks PROCESS only when it fills the
    // table, which `WHERE 1 = 0` or `LIMIT 0` skip (verified on 10.11).
    Status probe =
        s.Run("privileges", "SELECT COUNT(*) FROM information_schema.INNODB_TRX", nullptr, &code);
    if (probe.ok()) {
      has_process_ = true;
      last_trx_read_ = clock_->MonotonicMicros();
    } else if (code == 1227 || code == 1142 || code == 1044) {
      has_process_ = false;
    } else {
      return probe;
    }
    return Status::Ok();
  });
}

MariaDbMailbox::~MariaDbMailbox() = default;

std::string MariaDbMailbox::SelectList() const {
  return MariaDbSession::QuoteName(columns_.id) + ", " +
         MariaDbSession::QuoteName(columns_.message) +
         ", TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " +
         MariaDbSession::QuoteName(columns_.received) + ")";
}

Status MariaDbMailbox::Read(std::string_view what, const std::string& sql,
                            std::vector<MailboxRow>* out) {
  std::vector<MariaDbRow> rows;
  Status s = session_.Run(what, sql, &rows);
  if (!s.ok()) return s;
  for (MariaDbRow& r : rows) {
    auto id = MariaDbInt(r.at(0));
    if (!id) return Status::Infra("mailbox " + std::string(what) + ": a row without an id");
    MailboxRow m;
    m.id = *id;
    if (r.at(1)) m.message = std::move(*r[1]);
    if (auto t = MariaDbInt(r.at(2))) m.received_at = received_.ToUtc(*t);
    out->push_back(std::move(m));
  }
  return Status::Ok();
}

Status MariaDbMailbox::ReadAfter(std::int64_t after, int limit, std::vector<MailboxRow>* out) {
  const std::string id = MariaDbSession::QuoteName(columns_.id);
  return Read("read",
              "SELECT " + SelectList() + " FROM " + MariaDbSession::QuoteName(table_) + " WHERE " +
                  id + " > " + std::to_string(after) + " ORDER BY " + id + " LIMIT " +
                  std::to_string(limit),
              out);
}

Status MariaDbMailbox::ReadRanges(std::span<const IdRange> ranges, int limit,
                                  std::vector<MailboxRow>* out) {
  const std::string id = MariaDbSession::QuoteName(columns_.id);
  int left = limit;
  const std::string head =
      "SELECT " + SelectList() + " FROM " + MariaDbSession::QuoteName(table_) + " WHERE ";
  // Ranges ascend and do not overlap (capture's skipped ranges), so rows of
  // successive statements ascend too.
  for (std::size_t i = 0; i < ranges.size() && left > 0; i += kRangesPerStatement) {
    std::string where;
    for (std::size_t j = i; j < ranges.size() && j < i + kRangesPerStatement; ++j) {
      if (!where.empty()) where += " OR ";
      where += id;
      where += " BETWEEN ";
      where += std::to_string(ranges[j].first);
      where += " AND ";
      where += std::to_string(ranges[j].last);
    }
    const std::size_t before = out->size();
    std::string sql = head;
    sql += where;
    sql += " ORDER BY ";
    sql += id;
    sql += " LIMIT ";
    sql += std::to_string(left);
    Status s = Read("read ranges", sql, out);
    if (!s.ok()) return s;
    left -= static_cast<int>(out->size() - before);
  }
  return Status::Ok();
}

bool MariaDbMailbox::TakeTrxRead() {
  const std::int64_t now = clock_->MonotonicMicros();
  if (last_trx_read_ && now - *last_trx_read_ < kTrxCacheSpacingMicros) return false;
  last_trx_read_ = now;
  return true;
}

Result<std::optional<TransactionIds>> MariaDbMailbox::InProgressTransactions() {
  if (!TakeTrxRead()) return std::optional<TransactionIds>();
  // The marker: a transaction of this session, started (InnoDB starts it at
  // the first read of a table) before INNODB_TRX is read. The picture read
  // is current enough only if the marker is in it.
  Status s = session_.Run("transactions", "START TRANSACTION", nullptr);
  if (!s.ok()) return s;
  s = session_.Run("transactions",
                   "SELECT 1 FROM " + MariaDbSession::QuoteName(table_) + " LIMIT 1", nullptr);
  std::vector<MariaDbRow> rows;
  if (s.ok()) {
    s = session_.Run("transactions",
                     "SELECT trx_id, trx_mysql_thread_id = CONNECTION_ID() "
                     "FROM information_schema.INNODB_TRX",
                     &rows);
  }
  // Ends the marker; on a lost connection the server ends it.
  Status end = session_.Run("transactions", "COMMIT", nullptr);
  if (!s.ok()) return s;
  if (!end.ok()) return end;
  TransactionIds ids;
  bool marker = false;
  for (const MariaDbRow& r : rows) {
    auto x = MariaDbInt(r.at(0));
    auto own = MariaDbInt(r.at(1));
    if (!x || !own) return Status::Infra("mailbox transactions: a trx_id that is not a number");
    if (*own != 0) {
      marker = true;
    } else {
      ids.push_back(static_cast<std::uint64_t>(*x));
    }
  }
  if (!marker) return std::optional<TransactionIds>();  // an older picture: ask again
  return std::optional<TransactionIds>(std::move(ids));
}

Result<bool> MariaDbMailbox::AllEnded(const TransactionIds& txns) {
  if (txns.empty()) return true;
  // No marker needed: txns were in a current picture, and InnoDB only ever
  // replaces the cache with a newer one, so one absent from what is read
  // now has ended. Too soon after the last read: not known yet.
  if (!TakeTrxRead()) return false;
  std::string list;
  for (std::uint64_t x : txns) list += (list.empty() ? "" : ",") + std::to_string(x);
  std::vector<MariaDbRow> rows;
  Status s = session_.Run(
      "transaction status",
      "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_id IN (" + list + ")", &rows);
  if (!s.ok()) return s;
  auto n = rows.empty() ? std::nullopt : MariaDbInt(rows[0].at(0));
  if (!n) return Status::Infra("mailbox transaction status: no count");
  return *n == 0;
}

Result<GapProbe> MariaDbMailbox::ProbeGap(const IdRange& range) {
  const std::string id = MariaDbSession::QuoteName(columns_.id);
  std::vector<MariaDbRow> rows;
  unsigned int code = 0;
  Status s = session_.Run("gap probe",
                          "SELECT " + id + " FROM " + MariaDbSession::QuoteName(table_) +
                              " WHERE " + id + " BETWEEN " + std::to_string(range.first) + " AND " +
                              std::to_string(range.last) + " ORDER BY " + id +
                              (session_.is_mariadb() ? " LIMIT 1 LOCK IN SHARE MODE NOWAIT"
                                                     : " LIMIT 1 FOR SHARE NOWAIT"),
                          &rows, &code);
  if (!s.ok()) {
    if (IsLockRefused(code)) return GapProbe::kHeld;
    return s;
  }
  return rows.empty() ? GapProbe::kFree : GapProbe::kCommitted;
}

Result<MicrosSinceEpoch> MariaDbMailbox::ServerNow() {
  std::vector<MariaDbRow> rows;
  Status s = session_.Run(
      "server clock", "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))",
      &rows);
  if (!s.ok()) return s;
  auto now = rows.empty() ? std::nullopt : MariaDbInt(rows[0].at(0));
  if (!now) return Status::Infra("mailbox server clock: no value");
  return *now;
}

Result<std::int64_t> MariaDbMailbox::MaxId() {
  std::vector<MariaDbRow> rows;
  Status s = session_.Run("max id",
                          "SELECT COALESCE(MAX(" + MariaDbSession::QuoteName(columns_.id) +
                              "), 0) FROM " + MariaDbSession::QuoteName(table_),
                          &rows);
  if (!s.ok()) return s;
  auto max = rows.empty() ? std::nullopt : MariaDbInt(rows[0].at(0));
  if (!max) return Status::Infra("mailbox max id: no value");
  return *max;
}

}  // namespace msgx
