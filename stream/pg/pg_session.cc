#include "stream/pg/pg_session.h"

#include <ctime>
#include <pqxx/pqxx>

namespace msgx {

PgSession::PgSession(std::string url) : url_(std::move(url)) {}
PgSession::~PgSession() = default;

ErrorClass PgSqlStateClass(std::string_view state) {
  const std::string_view cls = state.substr(0, 2);
  // Connection (08), transaction rollback: serialization, deadlock (40),
  // resources (53), operator intervention and shutdown (57), system (58).
  if (cls == "08" || cls == "40" || cls == "53" || cls == "57" || cls == "58") {
    return ErrorClass::kInfra;
  }
  // A read-only transaction (a standby after failover, or
  // default_transaction_read_only), a lock or statement timeout, an object
  // in use, too many connections for the role, a login refused.
  static constexpr std::string_view kOutages[] = {"25006", "55P03", "55006", "57014",
                                                  "28000", "28P01", "53300"};
  for (std::string_view o : kOutages) {
    if (state == o) return ErrorClass::kInfra;
  }
  return ErrorClass::kInternal;
}

Status PgErrorStatus(const std::exception& e, const std::string& what) {
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string state = sql->sqlstate();
    if (PgSqlStateClass(state) == ErrorClass::kInfra) {
      return Status::Infra(what + " (SQLSTATE " + state + "): " + e.what());
    }
    return Status::Internal(what + " (SQLSTATE " + state + "): " + e.what());
  }
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    return Status::Infra(what + ": " + e.what());
  }
  return Status::Internal(what + ": " + e.what());
}

Status PgSession::OnConnection(const std::function<void(pqxx::connection&)>& fn) {
  try {
    if (!conn_ || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(url_);
    fn(*conn_);
    return Status::Ok();
  } catch (const std::exception& e) {
    Status s = PgErrorStatus(e, "postgres");
    if (s.error_class() == ErrorClass::kInfra) conn_.reset();
    return s;
  }
}

Status PgSession::Run(const std::function<void(pqxx::dbtransaction&)>& fn) {
  return OnConnection([&](pqxx::connection& c) {
    pqxx::work tx(c);
    fn(tx);
    tx.commit();
  });
}

Status PgSession::RunStatement(const std::function<void(pqxx::transaction_base&)>& fn) {
  return OnConnection([&](pqxx::connection& c) {
    pqxx::nontransaction tx(c);
    fn(tx);
  });
}

std::string PgTextLiteral(std::string_view s) {
  std::string out = "'";
  for (const char c : s) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string PgTimestamp(MicrosSinceEpoch micros) {
  std::time_t secs = static_cast<std::time_t>(micros / 1'000'000);
  long long frac = micros % 1'000'000;
  if (frac < 0) {
    frac += 1'000'000;
    --secs;
  }
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  size_t n = std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S", &tm);
  std::snprintf(buf + n, sizeof(buf) - n, ".%06lld+00", frac);
  return buf;
}

}  // namespace msgx
