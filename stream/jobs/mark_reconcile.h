// Reconciliation of the abandon list (docs/jobs.md#reconciliation; `msgx
// backfill --reconcile ID…`): an operator who has settled an abandoned
// row with the mailbox's owner marks it RECONCILED. Only ABANDONED rows
// change; their backfill_abandoned_at and backfill_abandoned_reason stay,
// and mark_reason says who reconciled them and when. Idempotent.
//
// Not fenced and needs no leadership: the mark job only ever writes rows
// whose mark_state is NULL, and the applier never writes mark_state, so
// nothing else writes the rows this changes. The same as SQL:
//   UPDATE proc_state SET mark_state = 'RECONCILED',
//          mark_reason = 'reconciled by <who>'
//    WHERE msg_id IN (…) AND mark_state = 'ABANDONED';
//
// Errors: kInfra when msgx's database cannot be written.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "stream/pg/pg_session.h"

namespace msgx {

// For each of `ids`: its mark_state after the call ("RECONCILED" for the
// ones reconciled now or before, "" for a msg_id that has no proc_state row
// or no mark state yet, otherwise the state it has), and how many changed
// now.
struct ReconcileResult {
  int reconciled = 0;
  std::map<std::int64_t, std::string> state;
};

Result<ReconcileResult> ReconcileAbandoned(PgSession* pg, const std::vector<std::int64_t>& ids,
                                           const std::string& by, MicrosSinceEpoch now);

}  // namespace msgx
