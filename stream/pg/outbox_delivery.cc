#include "stream/pg/outbox_delivery.h"

#include "stream/pg/pg_session.h"

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
  std::string sql = "target = ";
  sql.append(target).append(" AND state = 'PENDING' AND replayed_at IS NOT NULL AND event_id <= ");
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
    const pqxx::result r = tx.exec_params(
        "INSERT INTO outbox_delivery (target, first_event_id, last_event_id, events, sent_at) "
        "VALUES ($1, $2, $3, $4, $5::timestamptz) ON CONFLICT (target, last_event_id) DO NOTHING",
        target, d.first_event_id, d.last_event_id, d.events, sent_at);
    if (r.affected_rows() > 0) recorded += d.events;
  }
  if (!d.replayed_ids.empty()) {
    recorded += static_cast<std::int64_t>(
        tx.exec_params("UPDATE msg_event SET state = 'SENT', sent_at = $2::timestamptz, "
                       "attempts = attempts + 1 WHERE event_id = ANY($1::bigint[]) "
                       "AND state = 'PENDING'",
                       PgArrayLiteral(d.replayed_ids), sent_at)
            .affected_rows());
  }
  return recorded;
}

}  // namespace msgx
