#include "stream/jobs/event_retention.h"

#include <utility>

#include "stream/pg/pg_leadership.h"

namespace msgx {
EventRetention::EventRetention(PgSession* pg, const Clock* clock, EventRetentionOptions options)
    : pg_(pg), clock_(clock), options_(std::move(options)) {}

std::string EventRetention::Cutoff() const {
  return PgTimestamp(clock_->NowMicros() - options_.retention.count() * 1000);
}

Result<int> EventRetention::Step(std::int64_t epoch) {
  int deleted = 0;
  const std::string cutoff = Cutoff();
  Status s =
      RunFenced(pg_, options_.pipeline, epoch, options_.log_uuid, [&](pqxx::dbtransaction& tx) {
        const pqxx::result r = tx.exec_params(
            "DELETE FROM msg_event WHERE event_id IN (SELECT event_id FROM msg_event WHERE state = "
            "'SENT' AND sent_at < $1::timestamptz ORDER BY sent_at, event_id LIMIT $2 FOR UPDATE "
            "SKIP LOCKED)",
            cutoff, options_.batch);
        deleted = static_cast<int>(r.affected_rows());
      });
  if (!s.ok()) return s;
  return deleted;
}

Result<std::int64_t> EventRetention::Backlog(std::int64_t cap) {
  std::int64_t n = 0;
  const std::string cutoff = Cutoff();
  Status s = pg_->Run([&](pqxx::dbtransaction& tx) {
    n = tx.exec_params1(
              "SELECT count(*) FROM (SELECT 1 FROM msg_event WHERE state = 'SENT' AND sent_at < "
              "$1::timestamptz LIMIT $2) due",
              cutoff, cap)[0]
            .as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return n;
}

}  // namespace msgx
