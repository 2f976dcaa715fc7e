#include "stream/jobs/event_retention.h"

#include <algorithm>
#include <string>
#include <utility>

#include "stream/pg/pg_leadership.h"

namespace msgx {
namespace {

// The ranges due, oldest first, never the newest of a target: that one
// holds the target's delivered position (stream/pg/outbox_delivery.h).
// $1 the cutoff, $2 the most ranges.
constexpr const char* kDueRanges =
    "FROM outbox_delivery r WHERE r.sent_at < $1::timestamptz AND r.last_event_id < "
    "(SELECT max(m.last_event_id) FROM outbox_delivery m WHERE m.target = r.target) "
    "ORDER BY r.sent_at, r.target, r.last_event_id LIMIT $2";

}  // namespace

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
        deleted = 0;
        // Events marked SENT row by row (before V8, and replays).
        const pqxx::result r = tx.exec_params(
            "DELETE FROM msg_event WHERE event_id IN (SELECT event_id FROM msg_event WHERE state = "
            "'SENT' AND sent_at < $1::timestamptz ORDER BY sent_at, event_id LIMIT $2 FOR UPDATE "
            "SKIP LOCKED)",
            cutoff, options_.batch);
        deleted = static_cast<int>(r.affected_rows());
        if (deleted >= options_.batch) return;
        // Delivered ranges, whole, until the batch is full: the range's
        // rows (those still PENDING and never replayed: a DEAD row in it
        // stays), then the range.
        const pqxx::result due = tx.exec_params(
            std::string("SELECT r.target, r.first_event_id, r.last_event_id, r.events ") +
                kDueRanges + " FOR UPDATE SKIP LOCKED",
            cutoff, options_.batch - deleted);
        for (const auto& range : due) {
          if (deleted >= options_.batch) break;
          const auto target = range[0].as<std::string>();
          const auto first = range[1].as<std::int64_t>();
          const auto last = range[2].as<std::int64_t>();
          tx.exec_params(
              "DELETE FROM msg_event WHERE target = $1 AND state = 'PENDING' AND replayed_at IS "
              "NULL AND event_id BETWEEN $2 AND $3",
              target, first, last);
          tx.exec_params("DELETE FROM outbox_delivery WHERE target = $1 AND last_event_id = $2",
                         target, last);
          deleted += range[3].as<int>();
        }
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
    if (n >= cap) return;
    n += tx.exec_params1(std::string("SELECT coalesce(sum(events), 0) FROM (SELECT r.events ") +
                             kDueRanges + ") due",
                         cutoff, cap - n)[0]
             .as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return std::min(n, cap);
}

}  // namespace msgx
