#include "stream/dispatch/event_replay.h"

namespace msgx {
namespace {

Result<int> Replay(PgSession* pg, const std::string& where, const std::string& arg,
                   MicrosSinceEpoch now) {
  int changed = 0;
  Status s = pg->Run([&](pqxx::dbtransaction& tx) {
    pqxx::result r = tx.exec_params(
        "UPDATE msg_event SET state = 'PENDING', attempts = 0, next_attempt_at = NULL, "
        "replayed_at = $2::timestamptz WHERE state = 'DEAD' AND " +
            where,
        arg, PgTimestamp(now));
    changed = static_cast<int>(r.affected_rows());
  });
  if (!s.ok()) return s;
  return changed;
}

}  // namespace

Result<int> ReplayDeadEvents(PgSession* pg, const std::vector<std::int64_t>& event_ids,
                             MicrosSinceEpoch now) {
  return Replay(pg, "event_id = ANY($1::bigint[])", PgArrayLiteral(event_ids), now);
}

Result<int> ReplayDeadEventsOfTarget(PgSession* pg, const std::string& target,
                                     MicrosSinceEpoch now) {
  return Replay(pg, "target = $1", target, now);
}

}  // namespace msgx
