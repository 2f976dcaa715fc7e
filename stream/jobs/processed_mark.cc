#include "stream/jobs/processed_mark.h"

#include <unordered_map>
#include <utility>

#include "base/failpoint.h"
#include "stream/jobs/mark_settle.h"
#include "stream/pg/pg_leadership.h"

namespace msgx {
namespace {

constexpr const char* kToDo = "mark_state IS NULL AND state IN ('SUCCEEDED', 'SKIPPED', 'DEAD')";

// A PostgreSQL array literal of texts, for `$n::text[]`.
std::string TextArrayLiteral(const std::vector<std::string>& values) {
  std::string s = "{";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) s += ',';
    s += '"';
    for (char c : values[i]) {
      if (c == '"' || c == '\\') s += '\\';
      s += c;
    }
    s += '"';
  }
  return s + "}";
}

}  // namespace

ProcessedMark::ProcessedMark(PgSession* pg, MailboxMarks* mailbox, const Clock* clock,
                             ProcessedMarkOptions options)
    : pg_(pg), mailbox_(mailbox), clock_(clock), options_(std::move(options)) {}

Result<MarkBatch> ProcessedMark::TakeAndMark(std::int64_t epoch) {
  MarkBatch b;
  const std::string now = PgTimestamp(clock_->NowMicros());
  Status s = RunFenced(
      pg_, options_.pipeline, epoch, options_.log_uuid,
      [&](pqxx::dbtransaction& tx) {
        b.rows.clear();
        const pqxx::result r = tx.exec_params(
            std::string("SELECT msg_id, (EXTRACT(EPOCH FROM COALESCE(backfill_next_at, updated_at, "
                        "$2::timestamptz)) * 1000000)::bigint FROM proc_state WHERE ") +
                kToDo + " ORDER BY backfill_next_at, msg_id LIMIT $1",
            options_.batch, now);
        for (const auto& row : r) {
          b.rows.push_back({row[0].as<std::int64_t>(), row[1].as<std::int64_t>()});
        }
      },
      EpochCheck::kRead);  // it only reads here; the mailbox is marked outside
  if (!s.ok()) return s;
  if (b.rows.empty()) return b;
  if (Status m = mailbox_->MarkFromNull(b.rows, options_.status, &b.seen); !m.ok()) return m;
  return b;
}

Result<MarkStepResult> ProcessedMark::Settle(std::int64_t epoch, const MarkBatch& batch) {
  MarkStepResult out;
  out.taken = static_cast<int>(batch.rows.size());
  if (batch.rows.empty()) return out;
  std::unordered_map<std::int64_t, const MailboxMarkSeen*> seen;
  for (const MailboxMarkSeen& s : batch.seen) seen[s.id] = &s;
  std::vector<std::int64_t> ids;
  std::vector<std::string> states, reasons;
  for (const MarkRequest& r : batch.rows) {
    auto it = seen.find(r.id);
    if (it == seen.end()) {  // the mailbox said nothing of it: try again later
      ++out.unsettled;
      continue;
    }
    auto settled = SettleMark(r, *it->second, options_.status);
    if (!settled) {
      ++out.unsettled;
      continue;
    }
    switch (settled->state) {
      case MarkState::kMarked:
        ++out.marked;
        break;
      case MarkState::kMarkedElsewhere:
        ++out.elsewhere;
        break;
      case MarkState::kAbandoned:
        ++out.abandoned;
        break;
      case MarkState::kReconciled:
        break;
    }
    ids.push_back(r.id);
    states.emplace_back(MarkStateName(settled->state));
    reasons.push_back(std::move(settled->reason));
  }
  if (ids.empty()) return out;
  const std::string now = PgTimestamp(clock_->NowMicros());
  Status s =
      RunFenced(pg_, options_.pipeline, epoch, options_.log_uuid, [&](pqxx::dbtransaction& tx) {
        tx.exec_params(
            "UPDATE proc_state AS p SET mark_state = u.s, mark_reason = NULLIF(u.r, ''), "
            "backfill_at = CASE WHEN u.s IN ('MARKED', 'MARKED_ELSEWHERE') THEN $4::timestamptz "
            "ELSE p.backfill_at END, "
            "backfill_abandoned_at = CASE WHEN u.s = 'ABANDONED' THEN $4::timestamptz "
            "ELSE p.backfill_abandoned_at END, "
            "backfill_abandoned_reason = CASE WHEN u.s = 'ABANDONED' THEN u.r "
            "ELSE p.backfill_abandoned_reason END "
            "FROM unnest($1::bigint[], $2::text[], $3::text[]) AS u (id, s, r) "
            "WHERE p.msg_id = u.id AND p.mark_state IS NULL",
            PgArrayLiteral(ids), TextArrayLiteral(states), TextArrayLiteral(reasons), now);
      });
  if (!s.ok()) return s;
  return out;
}

Result<MarkStepResult> ProcessedMark::Step(std::int64_t epoch) {
  auto batch = TakeAndMark(epoch);
  if (!batch.ok()) return batch.status();
  if (!batch->rows.empty()) MSGX_FAILPOINT("mark.after_mailbox", "");
  return Settle(epoch, *batch);
}

Result<MarkCounts> ProcessedMark::Count(std::int64_t cap) {
  MarkCounts c;
  const std::string cutoff = PgTimestamp(clock_->NowMicros() - options_.overdue.count() * 1000);
  Status s = pg_->Run([&](pqxx::dbtransaction& tx) {
    c.backlog =
        tx.exec_params1(std::string("SELECT count(*) FROM (SELECT 1 FROM proc_state WHERE ") +
                            kToDo + " LIMIT $1) due",
                        cap)[0]
            .as<std::int64_t>();
    c.overdue =
        tx.exec_params1(std::string("SELECT count(*) FROM (SELECT 1 FROM proc_state WHERE ") +
                            kToDo + " AND backfill_next_at < $2::timestamptz LIMIT $1) due",
                        cap, cutoff)[0]
            .as<std::int64_t>();
    c.oldest_overdue = 0;
    if (c.overdue > 0) {
      c.oldest_overdue =
          tx.exec_params1(std::string("SELECT msg_id FROM proc_state WHERE ") + kToDo +
                              " AND backfill_next_at < $1::timestamptz ORDER BY "
                              "backfill_next_at, msg_id LIMIT 1",
                          cutoff)[0]
              .as<std::int64_t>();
    }
    c.abandoned = tx.exec_params1(
                        "SELECT count(*) FROM (SELECT 1 FROM proc_state WHERE "
                        "mark_state = 'ABANDONED' LIMIT $1) open",
                        cap)[0]
                      .as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return c;
}

}  // namespace msgx
