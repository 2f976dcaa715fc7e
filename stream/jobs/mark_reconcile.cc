#include "stream/jobs/mark_reconcile.h"

namespace msgx {

Result<ReconcileResult> ReconcileAbandoned(PgSession* pg, const std::vector<std::int64_t>& ids,
                                           const std::string& by, MicrosSinceEpoch now) {
  ReconcileResult out;
  const std::string reason = "reconciled by " + by + " at " + PgTimestamp(now);
  Status s = pg->Run([&](pqxx::dbtransaction& tx) {
    out.state.clear();
    const std::string array = PgArrayLiteral(ids);
    out.reconciled = static_cast<int>(
        tx.exec_params("UPDATE proc_state SET mark_state = 'RECONCILED', mark_reason = "
                       "left($2, 1000) WHERE msg_id = ANY($1::bigint[]) AND mark_state = "
                       "'ABANDONED'",
                       array, reason)
            .affected_rows());
    for (std::int64_t id : ids) out.state[id] = "";
    for (const auto& row :
         tx.exec_params("SELECT msg_id, mark_state FROM proc_state WHERE msg_id = "
                        "ANY($1::bigint[])",
                        array)) {
      out.state[row[0].as<std::int64_t>()] = row[1].is_null() ? "" : row[1].as<std::string>();
    }
  });
  if (!s.ok()) return s;
  return out;
}

}  // namespace msgx
