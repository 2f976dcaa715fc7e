#include "stream/jobs/pg_mailbox_marks.h"

#include <exception>
#include <pqxx/pqxx>
#include <utility>

#include "stream/pg/pg_session.h"

namespace msgx {

PgMailboxMarks::PgMailboxMarks(std::string url, std::string table, MailboxColumns columns,
                               std::string time_zone)
    : url_(std::move(url)),
      table_(std::move(table)),
      columns_(std::move(columns)),
      time_zone_(std::move(time_zone)) {}

std::unique_ptr<PgMailboxMarks> PgMailboxMarks::FromConfig(const Config& config) {
  return std::make_unique<PgMailboxMarks>(config.mailbox_url, config.mailbox_table,
                                          config.mailbox_columns, MailboxTimeZone(config));
}

PgMailboxMarks::~PgMailboxMarks() = default;

Status PgMailboxMarks::MarkFromNull(std::span<const MarkRequest> rows, const std::string& status,
                                    std::vector<MailboxMarkSeen>* out) {
  if (rows.empty()) return Status::Ok();
  std::vector<std::int64_t> ids, times;
  ids.reserve(rows.size());
  times.reserve(rows.size());
  for (const MarkRequest& r : rows) {
    ids.push_back(r.id);
    times.push_back(r.processed);
  }
  try {
    if (!conn_ || !conn_->is_open()) {
      conn_ = std::make_unique<pqxx::connection>(url_);
      conn_->set_client_encoding("UTF8");
      pqxx::nontransaction tx(*conn_);
      tx.exec("SET TIME ZONE " + tx.quote(time_zone_));
      // A hung statement is an outage, not a silent stall of the job.
      tx.exec("SET statement_timeout = '30s'");
    }
    pqxx::connection& c = *conn_;
    const std::string t = c.quote_name(table_);
    const std::string id = c.quote_name(columns_.id);
    const std::string processed = c.quote_name(columns_.processed);
    const std::string st = c.quote_name(columns_.status);
    // The outer read of `t` sees the statement's snapshot, taken before the
    // update: a row written now is reported by `upd`, the others as found.
    // Sent unnamed, so it is planned with its arrays: the planner knows a
    // batch's length and joins `upd` by hash. Do not prepare it: a generic
    // plan guesses 10 rows for unnest() and joins `upd` by a nested loop,
    // 1,000 x 1,000 comparisons a batch, about five times slower
    // (docs/performance.md#the-processed-mark-in-steady-state-2026-12-06).
    const std::string sql =
        "WITH want AS (SELECT w.id, 'epoch'::timestamptz + w.us * interval '1 microsecond' AS at "
        "FROM unnest($1::bigint[], $2::bigint[]) AS w (id, us)), "
        "upd AS (UPDATE " +
        t + " AS m SET " + processed + " = want.at, " + st +
        " = $3 FROM want "
        "WHERE m." +
        id + " = want.id AND m." + processed + " IS NULL RETURNING m." + id +
        " AS id) "
        "SELECT want.id, upd.id IS NOT NULL, f." +
        id + " IS NOT NULL, (EXTRACT(EPOCH FROM f." + processed +
        "::timestamptz) * 1000000)::bigint, f." + st +
        "::text FROM want LEFT JOIN upd ON upd.id = "
        "want.id LEFT JOIN " +
        t + " AS f ON f." + id + " = want.id";
    pqxx::nontransaction tx(c);
    const pqxx::result r = tx.exec_params(sql, PgArrayLiteral(ids), PgArrayLiteral(times), status);
    for (const auto& row : r) {
      MailboxMarkSeen s;
      s.id = row[0].as<std::int64_t>();
      if (row[1].as<bool>()) {
        s.kind = MailboxMarkSeen::Kind::kWritten;
      } else if (row[2].as<bool>()) {
        s.kind = MailboxMarkSeen::Kind::kFound;
        if (!row[3].is_null()) s.processed = row[3].as<std::int64_t>();
        if (!row[4].is_null()) s.status = row[4].as<std::string>();
      }
      out->push_back(std::move(s));
    }
    return Status::Ok();
  } catch (const std::exception& e) {
    conn_.reset();
    return Status::Infra(std::string("mailbox mark: ") + e.what());
  }
}

}  // namespace msgx
