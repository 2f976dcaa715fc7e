#include "stream/jobs/proc_state_archive.h"

#include <utility>

#include "base/failpoint.h"
#include "stream/pg/pg_leadership.h"

namespace msgx {
namespace {

// The rows due, on the row named `p`; $1 is the cutoff.
std::string Due(const std::string& p) {
  return p + ".state IN ('SUCCEEDED', 'SKIPPED', 'DEAD') AND " + p +
         ".mark_state IN ('MARKED', 'MARKED_ELSEWHERE', 'RECONCILED') AND " + p +
         ".updated_at < $1::timestamptz";
}

// Every column proc_state and proc_state_hst share.
constexpr const char* kColumns =
    "msg_id, state, identity_key, attempts, next_attempt_at, error_class, last_error, "
    "prev_error, updated_at, received_at, enqueued_at, log_offset, backfill_at, "
    "backfill_next_at, backfill_attempts, backfill_error, backfill_abandoned_at, "
    "backfill_abandoned_reason, mark_state, mark_reason";

// "a, b" -> "t.a, t.b".
std::string Qualified(const std::string& table, const std::string& columns) {
  std::string out;
  for (std::size_t b = 0; b < columns.size();) {
    std::size_t e = columns.find(',', b);
    if (e == std::string::npos) e = columns.size();
    while (b < e && columns[b] == ' ') ++b;
    if (!out.empty()) out += ", ";
    out += table + "." + columns.substr(b, e - b);
    b = e + 1;
  }
  return out;
}

// One statement: lock the old rows, turn them into shadows and insert their
// old values into the history.
//
// The shadows are updated by primary key alone (`= ANY (ARRAY(...))`), and
// the history rows are the locked old rows joined with the ids the update
// returned. Written as `UPDATE ... FROM old WHERE p.msg_id = old.msg_id AND
// <due on p>`, the planner, whose statistics still said no row was due (the
// processed mark had just settled them), drove the update from the archive's
// partial index and scanned `old` once per due row: 345 s per batch of
// 1,000 among 200,000 due rows (docs/performance.md#the-jobs-against-a-large-backlog).
// The locked rows need no second check: `FOR UPDATE` re-evaluates the due
// condition on the newest version of each row it locks (READ COMMITTED), and
// no other transaction can change a locked row before this one commits.
std::string MoveSql() {
  const std::string cols = kColumns;
  return "WITH old AS (SELECT " + cols + " FROM proc_state AS o WHERE " + Due("o") +
         " ORDER BY updated_at, msg_id LIMIT $2 FOR UPDATE SKIP LOCKED), "
         "moved AS (UPDATE proc_state AS p SET state = 'ARCHIVED', attempts = 0, "
         "next_attempt_at = NULL, error_class = NULL, last_error = NULL, prev_error = NULL, "
         "received_at = NULL, enqueued_at = NULL, backfill_attempts = 0, backfill_error = NULL, "
         "backfill_abandoned_at = NULL, backfill_abandoned_reason = NULL, mark_reason = NULL "
         "WHERE p.msg_id = ANY (ARRAY(SELECT msg_id FROM old)) RETURNING p.msg_id) "
         "INSERT INTO proc_state_hst AS h (" +
         cols + ", archived_at) SELECT " + Qualified("old", cols) +
         ", $3::timestamptz FROM old JOIN moved USING (msg_id) ON CONFLICT (msg_id) DO UPDATE SET "
         "state = EXCLUDED.state, identity_key = EXCLUDED.identity_key, attempts = "
         "EXCLUDED.attempts, "
         "next_attempt_at = EXCLUDED.next_attempt_at, error_class = EXCLUDED.error_class, "
         "last_error = EXCLUDED.last_error, prev_error = EXCLUDED.prev_error, "
         "updated_at = EXCLUDED.updated_at, received_at = EXCLUDED.received_at, "
         "enqueued_at = EXCLUDED.enqueued_at, log_offset = EXCLUDED.log_offset, "
         "backfill_at = EXCLUDED.backfill_at, backfill_next_at = EXCLUDED.backfill_next_at, "
         "backfill_attempts = EXCLUDED.backfill_attempts, "
         "backfill_error = EXCLUDED.backfill_error, "
         "backfill_abandoned_at = EXCLUDED.backfill_abandoned_at, "
         "backfill_abandoned_reason = EXCLUDED.backfill_abandoned_reason, "
         "mark_state = EXCLUDED.mark_state, mark_reason = EXCLUDED.mark_reason, "
         "archived_at = EXCLUDED.archived_at "
         "WHERE h.log_offset IS NULL OR h.log_offset < EXCLUDED.log_offset";
}

}  // namespace

ProcStateArchive::ProcStateArchive(PgSession* pg, const Clock* clock,
                                   ProcStateArchiveOptions options)
    : pg_(pg), clock_(clock), options_(std::move(options)) {}

std::string ProcStateArchive::Cutoff() const {
  return PgTimestamp(clock_->NowMicros() - options_.archive_after.count() * 1000);
}

Result<int> ProcStateArchive::Step(std::int64_t epoch) {
  static const std::string kSql = MoveSql();
  int moved = 0;
  const std::string cutoff = Cutoff();
  const std::string now = PgTimestamp(clock_->NowMicros());
  Status s =
      RunFenced(pg_, options_.pipeline, epoch, options_.log_uuid, [&](pqxx::dbtransaction& tx) {
        const pqxx::result r = tx.exec_params(kSql, cutoff, options_.batch, now);
        moved = static_cast<int>(r.affected_rows());
        // Moved, not committed (docs/commit-protocol.md#crash-points).
        if (moved > 0) MSGX_FAILPOINT("archive.moved", "");
      });
  if (!s.ok()) return s;
  return moved;
}

Result<std::int64_t> ProcStateArchive::Backlog(std::int64_t cap) {
  std::int64_t n = 0;
  const std::string cutoff = Cutoff();
  Status s = pg_->Run([&](pqxx::dbtransaction& tx) {
    n = tx.exec_params1("SELECT count(*) FROM (SELECT 1 FROM proc_state AS o WHERE " + Due("o") +
                            " LIMIT $2) due",
                        cutoff, cap)[0]
            .as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return n;
}

}  // namespace msgx
