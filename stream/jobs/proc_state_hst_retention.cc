#include "stream/jobs/proc_state_hst_retention.h"

#include <utility>

#include "stream/pg/pg_leadership.h"

namespace msgx {
namespace {

// The rows due read the index in its order, after a row's key ($3, $4),
// which the index reads as its start ('-infinity' for the oldest row); $1
// is the cutoff, $2 the batch.
constexpr const char* kDue =
    "SELECT msg_id FROM proc_state_hst WHERE archived_at < $1::timestamptz "
    "AND (archived_at, msg_id) > ($3::timestamptz, $4::bigint) "
    "ORDER BY archived_at, msg_id LIMIT $2";

// By primary key alone, like the archive's update (proc_state_archive.cc):
// the planner gets no chance to drive the delete from the other side. One
// row back: the count deleted, and the key of the last of them (NULLs when
// none), its time in microseconds since the epoch.
const std::string& DeleteSql() {
  static const std::string s =
      std::string("WITH d AS (DELETE FROM proc_state_hst WHERE msg_id = ANY (ARRAY(") + kDue +
      " FOR UPDATE SKIP LOCKED)) RETURNING archived_at, msg_id) "
      "SELECT (SELECT count(*) FROM d), "
      "(extract(epoch FROM l.archived_at) * 1000000)::bigint, l.msg_id "
      "FROM (SELECT 1) AS one LEFT JOIN (SELECT archived_at, msg_id FROM d "
      "ORDER BY archived_at DESC, msg_id DESC LIMIT 1) AS l ON true";
  return s;
}

}  // namespace

ProcStateHstRetention::ProcStateHstRetention(PgSession* pg, const Clock* clock,
                                             ProcStateHstRetentionOptions options)
    : pg_(pg), clock_(clock), options_(std::move(options)) {}

std::string ProcStateHstRetention::Cutoff() const {
  return PgTimestamp(clock_->NowMicros() - options_.retention.count() * 1000);
}

std::pair<std::string, std::int64_t> ProcStateHstRetention::From() {
  const MicrosSinceEpoch now = clock_->NowMicros();
  const MicrosSinceEpoch every = options_.rescan_every.count() * 1000;
  // A clock set back is a rescan too: the time since would be negative.
  if (!rescanned_at_ || now < *rescanned_at_ || now - *rescanned_at_ >= every) {
    after_.reset();
    rescanned_at_ = now;
  }
  if (!after_) return {"-infinity", 0};
  return {PgTimestamp(after_->archived_at), after_->msg_id};
}

Result<int> ProcStateHstRetention::Step(std::int64_t epoch) {
  int deleted = 0;
  std::optional<Position> last;
  const std::pair<std::string, std::int64_t> after = From();
  const std::string cutoff = Cutoff();
  Status s =
      RunFenced(pg_, options_.pipeline, epoch, options_.log_uuid, [&](pqxx::dbtransaction& tx) {
        const pqxx::row r =
            tx.exec_params1(DeleteSql(), cutoff, options_.batch, after.first, after.second);
        deleted = r[0].as<int>();
        last.reset();
        if (!r[1].is_null()) last = Position{r[1].as<MicrosSinceEpoch>(), r[2].as<std::int64_t>()};
      });
  if (!s.ok()) return s;  // the position stands
  if (last) after_ = last;
  return deleted;
}

Result<std::int64_t> ProcStateHstRetention::Backlog(std::int64_t cap) {
  static const std::string kCount = std::string("SELECT count(*) FROM (") + kDue + ") d";
  std::int64_t n = 0;
  const std::pair<std::string, std::int64_t> after = From();
  const std::string cutoff = Cutoff();
  Status s = pg_->Run([&](pqxx::dbtransaction& tx) {
    n = tx.exec_params1(kCount, cutoff, cap, after.first, after.second)[0].as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return n;
}

}  // namespace msgx
