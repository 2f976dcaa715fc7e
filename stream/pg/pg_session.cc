#include "stream/pg/pg_session.h"

#include <ctime>
#include <pqxx/pqxx>

namespace msgx {

PgSession::PgSession(std::string url) : url_(std::move(url)) {}
PgSession::~PgSession() = default;

Status PgErrorStatus(const std::exception& e, const std::string& what) {
  if (const auto* sql = dynamic_cast<const pqxx::sql_error*>(&e)) {
    const std::string state = sql->sqlstate();
    const std::string cls = state.substr(0, 2);
    if (cls == "08" || cls == "57" || cls == "40" || cls == "53" || cls == "58") {
      return Status::Infra(what + ": " + e.what());
    }
    return Status::Internal(what + " (SQLSTATE " + state + "): " + e.what());
  }
  if (dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr ||
      dynamic_cast<const pqxx::in_doubt_error*>(&e) != nullptr) {
    return Status::Infra(what + ": " + e.what());
  }
  return Status::Internal(what + ": " + e.what());
}

Status PgSession::Run(const std::function<void(pqxx::dbtransaction&)>& fn) {
  try {
    if (!conn_ || !conn_->is_open()) conn_ = std::make_unique<pqxx::connection>(url_);
    pqxx::work tx(*conn_);
    fn(tx);
    tx.commit();
    return Status::Ok();
  } catch (const std::exception& e) {
    Status s = PgErrorStatus(e, "postgres");
    if (s.error_class() == ErrorClass::kInfra) conn_.reset();
    return s;
  }
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
