#include "stream/pg/outbox_delivery.h"

#include "stream/pg/pg_leadership.h"
#include "stream/pg/pg_session.h"
#include "stream/pg/prepared.h"

namespace msgx {

std::string DeliveredThroughSql(std::string_view target) {
  std::string sql = "(SELECT coalesce(max(last_event_id), 0) FROM outbox_delivery WHERE target = ";
  sql.append(target).append(")");
  return sql;
}

std::string UndeliveredAboveSql(std::string_view target) {
  std::string sql = "target = ";
  sql.append(target).append(" AND state = 'PENDING' AND event_id > ");
  sql.append(DeliveredThroughSql(target));
  return sql;
}

std::string UndeliveredReplayedSql(std::string_view target) {
  // The target through a sub-select, so that PostgreSQL can never prove the
  // target's PENDING index (partial on a target literal) usable here.
  std::string sql = "target = (SELECT ";
  sql.append(target).append(
      "::varchar) AND state = 'PENDING' AND replayed_at IS NOT NULL AND event_id <= ");
  sql.append(DeliveredThroughSql(target));
  return sql;
}

std::string UndeliveredCountSql(std::string_view target) {
  std::string sql = "((SELECT count(*) FROM msg_event WHERE ";
  sql.append(UndeliveredAboveSql(target)).append(") + (SELECT count(*) FROM msg_event WHERE ");
  sql.append(UndeliveredReplayedSql(target)).append("))");
  return sql;
}

std::int64_t RecordDelivery(pqxx::dbtransaction& tx, const std::string& target, const Delivery& d,
                            const std::string& sent_at) {
  std::int64_t recorded = 0;
  if (d.events > 0) {
    const pqxx::result r = ExecPrepared(
        tx,
        "INSERT INTO outbox_delivery (target, first_event_id, last_event_id, events, sent_at) "
        "VALUES ($1, $2, $3, $4, $5::timestamptz) ON CONFLICT (target, last_event_id) DO NOTHING",
        target, d.first_event_id, d.last_event_id, d.events, sent_at);
    if (r.affected_rows() > 0) recorded += d.events;
  }
  if (!d.replayed_ids.empty()) {
    recorded += static_cast<std::int64_t>(
        ExecPrepared(tx,
                     "UPDATE msg_event SET state = 'SENT', sent_at = $2::timestamptz, "
                     "attempts = attempts + 1 WHERE event_id = ANY($1::bigint[]) "
                     "AND state = 'PENDING'",
                     PgArrayLiteral(d.replayed_ids), sent_at)
            .affected_rows());
  }
  return recorded;
}

Result<std::int64_t> RecordDeliveryFenced(PgSession* pg, const DeliveryFence& fence,
                                          const std::string& target, const Delivery& d,
                                          const std::string& sent_at) {
  std::int64_t recorded = 0;
  auto record = [&](pqxx::dbtransaction& tx) { recorded = RecordDelivery(tx, target, d, sent_at); };
  if (fence.log_uuid.empty() || fence.epoch == 0 || d.events == 0 || !d.replayed_ids.empty()) {
    Status s = fence.log_uuid.empty()
                   ? pg->Run(record)
                   : RunFenced(pg, fence.pipeline, fence.epoch, fence.log_uuid, record);
    if (!s.ok()) return s;
    return recorded;
  }
  // The lock is CheckEpoch's kLock, held to the statement's commit; the
  // insert reads the locked row, so a takeover either waits for it or has
  // already moved the epoch, and then nothing is inserted.
  static const std::string kSql =
      "WITH p AS (" + FenceRowSql(EpochCheck::kLock, 6) +
      "), "
      "ins AS (INSERT INTO outbox_delivery (target, first_event_id, last_event_id, events, "
      "sent_at) SELECT $1::varchar, $2::bigint, $3::bigint, $4::int, $5::timestamptz FROM p "
      "WHERE p.leader_epoch = $7::bigint AND p.log_uuid = $8::varchar "
      "ON CONFLICT (target, last_event_id) DO NOTHING RETURNING events) "
      "SELECT p.leader_epoch, p.log_uuid, (SELECT coalesce(sum(events), 0) FROM ins) FROM p";
  Status checked = Status::Ok();
  Status s = pg->RunStatement([&](pqxx::transaction_base& tx) {
    const pqxx::result r =
        ExecPrepared(tx, kSql, target, d.first_event_id, d.last_event_id, d.events, sent_at,
                     fence.pipeline, fence.epoch, fence.log_uuid);
    checked = CheckFencedRead(r, fence.pipeline, fence.epoch, fence.log_uuid);
    if (checked.ok()) recorded = r[0][2].as<std::int64_t>();
  });
  if (!s.ok()) return s;
  if (!checked.ok()) return checked;
  return recorded;
}

}  // namespace msgx
