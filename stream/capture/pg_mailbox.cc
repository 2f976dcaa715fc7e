#include "stream/capture/pg_mailbox.h"

#include <exception>
#include <pqxx/pqxx>

#include "stream/pg/pg_session.h"

namespace msgx {
namespace {

void AppendRows(const pqxx::result& r, std::vector<MailboxRow>* out) {
  for (const auto& row : r) {
    MailboxRow m;
    m.id = row[0].as<std::int64_t>();
    m.message = row[1].is_null() ? std::string() : row[1].as<std::string>();
    if (!row[2].is_null()) m.received_at = row[2].as<std::int64_t>();
    out->push_back(std::move(m));
  }
}

}  // namespace

PgMailbox::PgMailbox(std::string url, std::string table, MailboxColumns columns,
                     std::string time_zone)
    : url_(std::move(url)),
      table_(std::move(table)),
      columns_(std::move(columns)),
      time_zone_(std::move(time_zone)) {}

std::unique_ptr<PgMailbox> PgMailbox::FromConfig(const Config& config) {
  return std::make_unique<PgMailbox>(config.mailbox_url, config.mailbox_table,
                                     config.mailbox_columns, MailboxTimeZone(config));
}

PgMailbox::~PgMailbox() = default;

template <typename Fn>
Status PgMailbox::Run(const char* what, Fn&& fn) {
  try {
    if (!conn_ || !conn_->is_open()) {
      conn_ = std::make_unique<pqxx::connection>(url_);
      conn_->set_client_encoding("UTF8");
      // Belt and braces for "no DDL on the mailbox, ever"
      // (docs/capture.md#the-mailbox-is-not-ours): this session cannot write
      // at all.
      pqxx::nontransaction tx(*conn_);
      tx.exec("SET default_transaction_read_only = on");
      // A hung statement is an outage, not a silent stall of capture.
      tx.exec("SET statement_timeout = '30s'");
      // A TIMESTAMP (no zone) received column is a reading in this zone.
      tx.exec("SET TIME ZONE " + tx.quote(time_zone_));
    }
    fn(*conn_);
    return Status::Ok();
  } catch (const std::exception& e) {
    conn_.reset();
    return Status::Infra(std::string("mailbox ") + what + ": " + e.what());
  }
}

Status PgMailbox::ReadAfter(std::int64_t after, int limit, std::vector<MailboxRow>* out) {
  return Run("read", [&](pqxx::connection& c) {
    const std::string sql =
        "SELECT " + c.quote_name(columns_.id) + ", " + c.quote_name(columns_.message) +
        ", (EXTRACT(EPOCH FROM " + c.quote_name(columns_.received) +
        "::timestamptz) * 1000000)::bigint FROM " + c.quote_name(table_) + " WHERE " +
        c.quote_name(columns_.id) + " > $1 ORDER BY " + c.quote_name(columns_.id) + " LIMIT $2";
    pqxx::nontransaction tx(c);
    AppendRows(tx.exec_params(sql, after, limit), out);
  });
}

Status PgMailbox::ReadRanges(std::span<const IdRange> ranges, int limit,
                             std::vector<MailboxRow>* out) {
  if (ranges.empty()) return Status::Ok();
  std::vector<std::int64_t> lo, hi;
  for (const IdRange& r : ranges) {
    lo.push_back(r.first);
    hi.push_back(r.last);
  }
  return Run("read ranges", [&](pqxx::connection& c) {
    // One index range scan per range (LATERAL): a plain join lets the
    // planner walk the whole table in id order and test every row against
    // every range, which took 32 s for 3,400 ranges over 70,000 rows
    // (docs/capture.md#skipped-ranges); this takes 80 ms.
    const std::string id = c.quote_name(columns_.id);
    const std::string sql = "SELECT m." + id + ", m." + c.quote_name(columns_.message) +
                            ", (EXTRACT(EPOCH FROM m." + c.quote_name(columns_.received) +
                            "::timestamptz) * 1000000)::bigint FROM unnest($1::bigint[], "
                            "$2::bigint[]) AS r(lo, hi) CROSS JOIN "
                            "LATERAL (SELECT * FROM " +
                            c.quote_name(table_) + " x WHERE x." + id +
                            " BETWEEN r.lo AND r.hi ORDER BY x." + id + " LIMIT $3) m ORDER BY m." +
                            id + " LIMIT $3";
    pqxx::nontransaction tx(c);
    AppendRows(tx.exec_params(sql, PgArrayLiteral(lo), PgArrayLiteral(hi), limit), out);
  });
}

Result<std::optional<TransactionIds>> PgMailbox::InProgressTransactions() {
  TransactionIds ids;
  Status s = Run("snapshot", [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    pqxx::result r = tx.exec("SELECT x::text FROM pg_snapshot_xip(pg_current_snapshot()) AS x");
    for (const auto& row : r) ids.push_back(std::stoull(row[0].as<std::string>()));
  });
  if (!s.ok()) return s;
  return std::optional<TransactionIds>(std::move(ids));  // a snapshot is always current
}

Result<bool> PgMailbox::AllEnded(const TransactionIds& txns) {
  if (txns.empty()) return true;
  bool ended = false;
  // "Ended" as snapshots see it: no longer in the xip list of a fresh
  // snapshot. pg_xact_status() alone is not enough: PostgreSQL marks a
  // commit in the commit log before it leaves the proc array, so for a
  // moment pg_xact_status() says 'committed' while a new snapshot (the next
  // read's) still treats the transaction as running and does not see its
  // row. That row would then be skipped and captured late, out of order.
  // The transactions came from an earlier snapshot's xip list, so they are
  // below any later snapshot's xmax: absent from its xip list = finished.
  Status s = Run("transaction status", [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    pqxx::result r = tx.exec_params(
        "SELECT count(*) FROM unnest($1::xid8[]) AS x "
        "WHERE x IN (SELECT pg_snapshot_xip(pg_current_snapshot()))",
        PgArrayLiteral(txns));
    ended = r[0][0].as<std::int64_t>() == 0;
  });
  if (!s.ok()) return s;
  return ended;
}

Result<MicrosSinceEpoch> PgMailbox::ServerNow() {
  MicrosSinceEpoch now = 0;
  Status s = Run("server clock", [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    now = tx.exec1("SELECT (EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint")[0]
              .as<MicrosSinceEpoch>();
  });
  if (!s.ok()) return s;
  return now;
}

Result<std::int64_t> PgMailbox::MaxId() {
  std::int64_t max = 0;
  Status s = Run("max id", [&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    max = tx.exec1("SELECT coalesce(max(" + c.quote_name(columns_.id) + "), 0) FROM " +
                   c.quote_name(table_))[0]
              .as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return max;
}

}  // namespace msgx
