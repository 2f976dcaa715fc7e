#include "stream/pg/pg_leadership.h"

#include <unistd.h>

#include "stream/pg/pg_session.h"
#include "stream/pg/prepared.h"

namespace msgx {

PgLeadership::PgLeadership(std::string url, std::string log_uuid, std::string pipeline)
    : url_(std::move(url)), log_uuid_(std::move(log_uuid)), pipeline_(std::move(pipeline)) {}

PgLeadership::~PgLeadership() { Release(); }

void PgLeadership::Release() {
  conn_.reset();  // closing the session releases the advisory lock
  epoch_ = 0;
}

Result<LeadershipAttempt> PgLeadership::TryAcquire() {
  LeadershipAttempt out;
  try {
    if (!conn_ || !conn_->is_open()) {
      conn_ = std::make_unique<pqxx::connection>(url_);
      pqxx::nontransaction nt(*conn_);
      char host[256] = {0};
      ::gethostname(host, sizeof(host) - 1);
      nt.exec("SET application_name = " +
              nt.quote("msgx run pid=" + std::to_string(::getpid()) + " host=" + host));
    }
    {
      pqxx::nontransaction nt(*conn_);
      const bool got = nt.exec_params1("SELECT pg_try_advisory_lock($1)", kLockKey)[0].as<bool>();
      if (!got) {
        pqxx::result h = nt.exec_params(
            "SELECT coalesce(a.application_name, '') || ' (backend ' || l.pid || ')' "
            "FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid "
            "WHERE l.locktype = 'advisory' AND l.granted AND "
            "((l.classid::bigint << 32) | l.objid::bigint) = $1",
            kLockKey);
        out.holder = h.empty() ? "another msgx" : h[0][0].as<std::string>();
        return out;
      }
    }
    pqxx::work tx(*conn_);
    tx.exec_params("INSERT INTO pipeline (name, log_uuid) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                   pipeline_, log_uuid_);
    // FOR UPDATE, not the UPDATE's own lock: it is what waits for every
    // fenced transaction in flight (their FOR KEY SHARE, CheckEpoch), so no
    // new epoch is granted while a stale one can still commit.
    const std::string owner =
        tx.exec_params1("SELECT log_uuid FROM pipeline WHERE name = $1 FOR UPDATE", pipeline_)[0]
            .as<std::string>();
    if (owner != log_uuid_) {
      tx.abort();
      Release();
      return Status::Config("pipeline '" + pipeline_ + "' belongs to log " + owner +
                            ", not to this state.dir's log " + log_uuid_ +
                            "; refusing to write (a different log pointed at the same database)");
    }
    epoch_ = tx.exec_params1(
                   "UPDATE pipeline SET leader_epoch = leader_epoch + 1, updated_at = now() "
                   "WHERE name = $1 RETURNING leader_epoch",
                   pipeline_)[0]
                 .as<std::int64_t>();
    tx.commit();
    out.leader = true;
    out.epoch = epoch_;
    return out;
  } catch (const std::exception& e) {
    Release();
    return PgErrorStatus(e, "leadership");
  }
}

Status PgLeadership::CheckAlive() {
  if (!conn_ || epoch_ == 0) return Status::Infra("not leader");
  try {
    pqxx::nontransaction nt(*conn_);
    nt.exec("SELECT 1");
    return Status::Ok();
  } catch (const std::exception& e) {
    Release();
    return Status::Infra(std::string("leadership lost: ") + e.what());
  }
}

namespace {
// Ends a fenced transaction without a commit; PgSession::Run catches it.
struct StaleLeader : std::exception {};
}  // namespace

Status RunFenced(PgSession* pg, const std::string& pipeline, std::int64_t epoch,
                 const std::string& log_uuid, const std::function<void(pqxx::dbtransaction&)>& fn,
                 EpochCheck how) {
  if (epoch == 0) return Status::Infra("not leader");
  Status fence = Status::Ok();
  Status s = pg->Run([&](pqxx::dbtransaction& tx) {
    fence = CheckEpoch(tx, pipeline, epoch, log_uuid, how);
    if (!fence.ok()) throw StaleLeader();
    fn(tx);
  });
  return fence.ok() ? s : fence;
}

std::string FencedReadSql(const std::string& sql, int pipeline_param) {
  std::string out = "SELECT p.leader_epoch, p.log_uuid, r.* FROM pipeline p LEFT JOIN LATERAL (";
  out.append(sql).append(") r ON true WHERE p.name = $").append(std::to_string(pipeline_param));
  return out;
}

Status CheckFencedRead(const pqxx::result& r, const std::string& pipeline, std::int64_t epoch,
                       const std::string& log_uuid) {
  const std::string stale(kStaleEpochMark);
  if (r.empty()) return Status::Infra(stale + ": no pipeline row '" + pipeline + "'");
  const auto current = r[0][0].as<std::int64_t>();
  const auto owner = r[0][1].as<std::string>();
  if (owner != log_uuid) return Status::Config("pipeline belongs to log " + owner);
  if (current != epoch) {
    return Status::Infra(stale + " " + std::to_string(epoch) + " (current " +
                         std::to_string(current) + "): another msgx leads now");
  }
  return Status::Ok();
}

std::string FenceRowSql(EpochCheck how, int pipeline_param, std::string_view more_columns) {
  std::string sql = "SELECT leader_epoch, log_uuid";
  sql.append(more_columns).append(" FROM pipeline WHERE name = $");
  sql.append(std::to_string(pipeline_param));
  // FOR KEY SHARE, the weakest row lock: it conflicts with the takeover's
  // FOR UPDATE (the fence) but not with the FOR NO KEY UPDATE of the
  // leader's own `UPDATE pipeline SET applied_offset`, so the applier's
  // commit does not wait for a dispatcher's SENT update
  // (docs/commit-protocol.md#single-writer).
  if (how == EpochCheck::kLock) sql.append(" FOR KEY SHARE");
  return sql;
}

Status CheckEpoch(pqxx::dbtransaction& tx, const std::string& pipeline, std::int64_t epoch,
                  const std::string& log_uuid, EpochCheck how) {
  static const std::string kRead = FenceRowSql(EpochCheck::kRead);
  static const std::string kLock = FenceRowSql(EpochCheck::kLock);
  // Its rows are those of a FencedReadSql with no rows of its own.
  return CheckFencedRead(ExecPrepared(tx, how == EpochCheck::kLock ? kLock : kRead, pipeline),
                         pipeline, epoch, log_uuid);
}

}  // namespace msgx
