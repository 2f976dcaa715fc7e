#include "stream/jobs/proc_state_hst_retention.h"

#include <utility>

#include "stream/pg/pg_leadership.h"

namespace msgx {
namespace {

// The rows due read the index in its order; $1 is the cutoff, $2 the batch.
constexpr const char* kDue =
    "SELECT msg_id FROM proc_state_hst WHERE archived_at < $1::timestamptz "
    "ORDER BY archived_at, msg_id LIMIT $2";

// By primary key alone, like the archive's update (proc_state_archive.cc):
// the planner gets no chance to drive the delete from the other side.
const std::string& DeleteSql() {
  static const std::string s =
      std::string("DELETE FROM proc_state_hst WHERE msg_id = ANY (ARRAY(") + kDue +
      " FOR UPDATE SKIP LOCKED))";
  return s;
}

}  // namespace

ProcStateHstRetention::ProcStateHstRetention(PgSession* pg, const Clock* clock,
                                             ProcStateHstRetentionOptions options)
    : pg_(pg), clock_(clock), options_(std::move(options)) {}

std::string ProcStateHstRetention::Cutoff() const {
  return PgTimestamp(clock_->NowMicros() - options_.retention.count() * 1000);
}

Result<int> ProcStateHstRetention::Step(std::int64_t epoch) {
  int deleted = 0;
  const std::string cutoff = Cutoff();
  Status s =
      RunFenced(pg_, options_.pipeline, epoch, options_.log_uuid, [&](pqxx::dbtransaction& tx) {
        const pqxx::result r = tx.exec_params(DeleteSql(), cutoff, options_.batch);
        deleted = static_cast<int>(r.affected_rows());
      });
  if (!s.ok()) return s;
  return deleted;
}

Result<std::int64_t> ProcStateHstRetention::Backlog(std::int64_t cap) {
  std::int64_t n = 0;
  const std::string cutoff = Cutoff();
  Status s = pg_->Run([&](pqxx::dbtransaction& tx) {
    n = tx.exec_params1(std::string("SELECT count(*) FROM (") + kDue + ") due", cutoff, cap)[0]
            .as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return n;
}

}  // namespace msgx
