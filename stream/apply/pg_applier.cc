#include "stream/apply/pg_applier.h"

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/failpoint.h"
#include "base/log.h"
#include "base/metrics.h"
#include "codecs/identity_key.h"
#include "state/digest.h"
#include "state/outcome.h"
#include "stream/pg/binary_array.h"
#include "stream/pg/pg_leadership.h"
#include "stream/pg/prepared.h"

namespace msgx {
namespace {

// SQL strategy: proc_state and msg_event, the big ones, are inserted from
// unnest() over one binary array parameter per column (stream/pg/binary_array.h;
// libpqxx 6.4 binds no arrays itself); the small tables, a few rows a batch,
// get multi-row VALUES statements built with tx.quote(). One statement per
// table for any ordinary batch. Very large batches are cut into chunks of at
// most kMaxRowsPerStatement rows or about kMaxStatementBytes; every statement
// is idempotent per row, so chunking changes nothing but size. msg_event's
// BIGSERIAL follows the order the rows are inserted in, the log order
// (WriteEvents).
constexpr size_t kMaxRowsPerStatement = 2000;
constexpr size_t kMaxStatementBytes = 8u << 20;
// The event insert's function scan over unnest() holds its rows, payloads
// included, in a tuplestore before the insert reads them (ORDER BY ord needs
// no sort: PostgreSQL knows WITH ORDINALITY's order): up to
// kMaxStatementBytes and the rows' overhead. PostgreSQL's default work_mem
// (4 MB) sent most of those tuplestores to temporary files (165 MB of them
// in a drain of 100,000 messages,
// docs/performance.md#the-event-insert-sorts-in-memory); the applier's
// transaction raises it for itself, so one statement's rows stay in memory.
constexpr const char* kEventRowsMemory = "SET LOCAL work_mem = '32MB'";

// Carries a Status out of PgSession::Run's function: throwing rolls the
// transaction back, and Step() returns the Status it recorded.
struct Abort : std::exception {
  const char* what() const noexcept override { return "applier: aborted"; }
};

std::string Text(pqxx::dbtransaction& tx, std::string_view s) { return tx.quote(std::string(s)); }
// NULL for an empty text (the fold's "none").
std::string TextOrNull(pqxx::dbtransaction& tx, std::string_view s) {
  return s.empty() ? "NULL" : Text(tx, s);
}
std::string Int(std::int64_t v) { return std::to_string(v) + "::bigint"; }
std::string Time(MicrosSinceEpoch micros) { return "'" + PgTimestamp(micros) + "'::timestamptz"; }

// Executes `head` (v1), (v2), ... `tail` over `rows`, in row order, in as
// few statements as the chunk limits allow; `values(row)` renders the
// comma-separated SQL literals of one row (without the parentheses).
template <typename Row, typename Fn>
void ExecValues(pqxx::dbtransaction& tx, const std::string& head, const std::string& tail,
                const std::vector<const Row*>& rows, Fn values) {
  std::string sql;
  size_t n = 0;
  for (const Row* r : rows) {
    sql += n == 0 ? head : ",";
    sql += '(';
    sql += values(*r);
    sql += ')';
    if (++n >= kMaxRowsPerStatement || sql.size() >= kMaxStatementBytes) {
      tx.exec(sql + tail);
      sql.clear();
      n = 0;
    }
  }
  if (n > 0) tx.exec(sql + tail);
}

template <typename Row>
std::vector<const Row*> All(const std::vector<Row>& rows) {
  std::vector<const Row*> out;
  out.reserve(rows.size());
  for (const Row& r : rows) out.push_back(&r);
  return out;
}

// Columns of an unnest() insert are arrays in PostgreSQL's binary format,
// one parameter each (stream/pg/binary_array.h). The fold's "none" (an
// empty text, a zero id or time) is NULL.
void AddTextOrNull(PgBinaryArray& c, std::string_view v) {
  if (v.empty()) {
    c.AddNull();
  } else {
    c.AddText(v);
  }
}
void AddInt8OrNull(PgBinaryArray& c, std::int64_t v) {
  if (v == 0) {
    c.AddNull();
  } else {
    c.AddInt8(v);
  }
}
void AddTimeOrNull(PgBinaryArray& c, MicrosSinceEpoch micros) {
  if (micros == 0) {
    c.AddNull();
  } else {
    c.AddTimestampTz(micros);
  }
}

// Executes `sql` with the N arrays as $1..$N, binary.
template <std::size_t N>
pqxx::result ExecArrays(pqxx::dbtransaction& tx, const std::string& sql,
                        const std::array<std::string, N>& bytes) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return ExecPrepared(tx, sql, pqxx::binarystring(bytes[I].data(), bytes[I].size())...);
  }
  (std::make_index_sequence<N>{});
}

template <std::size_t N>
std::array<std::string, N> TakeAll(std::array<PgBinaryArray, N>& c) {
  return [&]<std::size_t... I>(std::index_sequence<I...>) {
    return std::array<std::string, N>{c[I].Take()...};
  }
  (std::make_index_sequence<N>{});
}

// Executes `sql` with the N columns as $1..$N, binary, and empties them.
template <std::size_t N>
pqxx::result ExecColumns(pqxx::dbtransaction& tx, const std::string& sql,
                         std::array<PgBinaryArray, N>& c) {
  return ExecArrays(tx, sql, TakeAll(c));
}

// An insert of the big tables, proc_state and msg_event, first as a plain
// INSERT: `sql` followed by nothing. INSERT ... ON CONFLICT checks the
// arbiter index before each row and writes a second WAL record after it
// (PostgreSQL's speculative insertion), about a quarter of proc_state's
// insert and a sixth of msg_event's
// (docs/performance.md#plain-inserts-2026-12-06). A row already there is
// rare (a batch applied again after PostgreSQL stopped inside its commit, a
// message decided again at a later offset, seed mode's FAILED row), and the
// plain INSERT then fails with a unique violation inside its savepoint: the
// statement runs again as `sql` + `on_conflict`, whose per-row rules decide
// as they always did. Empties the columns; counts that second run in
// `*upserts`.
template <std::size_t N>
void InsertColumns(pqxx::dbtransaction& tx, const std::string& sql, const std::string& on_conflict,
                   std::array<PgBinaryArray, N>& c, int* upserts) {
  // By hand: libpqxx 6.4's subtransaction sends its SAVEPOINT with its
  // first exec(), and never with exec_prepared().
  const std::array<std::string, N> bytes = TakeAll(c);
  tx.exec0("SAVEPOINT msgx_plain_insert");
  try {
    ExecArrays(tx, sql, bytes);
    tx.exec0("RELEASE SAVEPOINT msgx_plain_insert");
    return;
  } catch (const pqxx::unique_violation&) {
    tx.exec0("ROLLBACK TO SAVEPOINT msgx_plain_insert");
  }
  ++*upserts;
  ExecArrays(tx, sql + on_conflict, bytes);
}

// `backfill_next[i]`: rows[i]'s backfill_next_at when its row has none yet.
void WriteOutcomes(pqxx::dbtransaction& tx, const std::vector<OutcomeRow>& rows,
                   const std::vector<MicrosSinceEpoch>& backfill_next, int* upserts) {
  static const std::string kSql =
      "INSERT INTO proc_state AS p (msg_id, state, identity_key, attempts, error_class, "
      "last_error, prev_error, updated_at, received_at, enqueued_at, log_offset, "
      "backfill_next_at) SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], "
      "$4::int[], $5::text[], $6::text[], $7::text[], $8::timestamptz[], $9::timestamptz[], "
      "$10::timestamptz[], $11::bigint[], $12::timestamptz[])";
  static const std::string kOnConflict =
      " ON CONFLICT (msg_id) DO UPDATE SET state = EXCLUDED.state, "
      "identity_key = EXCLUDED.identity_key, attempts = EXCLUDED.attempts, "
      "error_class = EXCLUDED.error_class, last_error = EXCLUDED.last_error, "
      "prev_error = EXCLUDED.prev_error, updated_at = EXCLUDED.updated_at, "
      "received_at = EXCLUDED.received_at, enqueued_at = EXCLUDED.enqueued_at, "
      "log_offset = EXCLUDED.log_offset, next_attempt_at = NULL, "
      "backfill_next_at = COALESCE(p.backfill_next_at, EXCLUDED.backfill_next_at) "
      "WHERE p.log_offset < EXCLUDED.log_offset "
      "OR (p.log_offset IS NULL AND p.state <> 'ARCHIVED')";
  using T = PgElementType;
  std::array<PgBinaryArray, 12> c{PgBinaryArray(T::kInt8),        PgBinaryArray(T::kText),
                                  PgBinaryArray(T::kText),        PgBinaryArray(T::kInt4),
                                  PgBinaryArray(T::kText),        PgBinaryArray(T::kText),
                                  PgBinaryArray(T::kText),        PgBinaryArray(T::kTimestampTz),
                                  PgBinaryArray(T::kTimestampTz), PgBinaryArray(T::kTimestampTz),
                                  PgBinaryArray(T::kInt8),        PgBinaryArray(T::kTimestampTz)};
  size_t n = 0;
  auto flush = [&] {
    if (n > 0) InsertColumns(tx, kSql, kOnConflict, c, upserts);
    n = 0;
  };
  for (size_t i = 0; i < rows.size(); ++i) {
    const OutcomeRow& r = rows[i];
    const Outcome& o = r.outcome;
    c[0].AddInt8(o.mailbox_id);
    c[1].AddText(OutcomeStateName(o.state));
    AddTextOrNull(c[2], o.identity_key);
    c[3].AddInt4(o.attempts);
    AddTextOrNull(c[4], o.error_class);
    AddTextOrNull(c[5], o.last_error);
    AddTextOrNull(c[6], o.prev_error);
    c[7].AddTimestampTz(o.decided_micros);
    AddTimeOrNull(c[8], r.received_micros);
    AddTimeOrNull(c[9], r.enqueued_micros);
    c[10].AddInt8(o.log_offset);
    c[11].AddTimestampTz(backfill_next[i]);
    if (++n >= kMaxRowsPerStatement || c[5].Bytes() + c[6].Bytes() >= kMaxStatementBytes) flush();
  }
  flush();
}

// Events at or below `applied` (pipeline.applied_offset) are left out: the
// database had them, and sent-event compaction may have deleted them since.
// `received`: the received_at of each source message (the outcomes of the
// same batches); an event whose source is not there has none (NULL).
void WriteEvents(pqxx::dbtransaction& tx, const std::vector<EventRow>& rows, std::int64_t applied,
                 const std::unordered_map<std::int64_t, MicrosSinceEpoch>& received, int* upserts) {
  // ORDER BY ord: event_id (BIGSERIAL) follows the batch's order, the log's.
  static const std::string kSql =
      "INSERT INTO msg_event (event_key, target, partition_key, event_type, state_version, "
      "payload_json, created_at, source_msg_id, received_at) SELECT k, t, pk, et, sv, p, ca, sm, "
      "ra FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], "
      "$7::timestamptz[], $8::bigint[], $9::timestamptz[]) WITH ORDINALITY AS u (k, t, pk, et, "
      "sv, p, ca, sm, ra, ord) ORDER BY ord";
  static const std::string kOnConflict = " ON CONFLICT (event_key) DO NOTHING";
  if (rows.empty()) return;
  tx.exec0(kEventRowsMemory);
  using T = PgElementType;
  std::array<PgBinaryArray, 9> c{
      PgBinaryArray(T::kText),        PgBinaryArray(T::kText), PgBinaryArray(T::kText),
      PgBinaryArray(T::kText),        PgBinaryArray(T::kInt8), PgBinaryArray(T::kText),
      PgBinaryArray(T::kTimestampTz), PgBinaryArray(T::kInt8), PgBinaryArray(T::kTimestampTz)};
  size_t n = 0;
  auto flush = [&] {
    if (n > 0) InsertColumns(tx, kSql, kOnConflict, c, upserts);
    n = 0;
  };
  for (const EventRow& e : rows) {
    if (e.state_version <= applied) continue;
    c[0].AddText(e.event_key);
    c[1].AddText(e.target);
    AddTextOrNull(c[2], e.partition_key);
    c[3].AddText(e.event_type);
    c[4].AddInt8(e.state_version);
    c[5].AddText(e.payload_json);
    c[6].AddTimestampTz(e.created_micros);
    AddInt8OrNull(c[7], e.source_msg_id);
    const auto source = received.find(e.source_msg_id);
    AddTimeOrNull(c[8], source == received.end() ? 0 : source->second);
    if (++n >= kMaxRowsPerStatement || c[5].Bytes() >= kMaxStatementBytes) flush();
  }
  flush();
}

std::string RefKey(const ReferenceRow& r) {
  return sis::BoundKey(r.rkey, sis::kMaxReferenceKeyChars);
}

void WriteReferences(pqxx::dbtransaction& tx, const std::vector<ReferenceRow>& rows) {
  std::vector<const ReferenceRow*> upserts;
  std::vector<const ReferenceRow*> deletes;
  for (const ReferenceRow& r : rows) (r.deleted ? deletes : upserts).push_back(&r);
  ExecValues<ReferenceRow>(
      tx,
      "INSERT INTO ref_master AS r (rtype, rkey, payload_json, source, refreshed_at, "
      "state_version) VALUES ",
      " ON CONFLICT (rtype, rkey) DO UPDATE SET payload_json = EXCLUDED.payload_json, "
      "source = EXCLUDED.source, refreshed_at = EXCLUDED.refreshed_at, "
      "state_version = EXCLUDED.state_version "
      "WHERE r.state_version IS NULL OR r.state_version <= EXCLUDED.state_version",
      upserts, [&](const ReferenceRow& r) {
        // An empty source takes the column's default ('AODB').
        return Text(tx, r.rtype) + "," + Text(tx, RefKey(r)) + "," + Text(tx, r.payload_json) +
               "," + (r.source.empty() ? std::string("DEFAULT") : Text(tx, r.source)) + "," +
               Time(r.refreshed_micros) + "," + Int(r.state_version);
      });
  ExecValues<ReferenceRow>(
      tx, "DELETE FROM ref_master AS r USING (VALUES ",
      ") AS d (rtype, rkey, state_version) WHERE r.rtype = d.rtype AND r.rkey = d.rkey "
      "AND (r.state_version IS NULL OR r.state_version <= d.state_version)",
      deletes, [&](const ReferenceRow& r) {
        return Text(tx, r.rtype) + "," + Text(tx, RefKey(r)) + "," + Int(r.state_version);
      });
}

// The fold (version 2 on) bounds every key it writes; a pending batch of
// an older fold version, still unapplied at an upgrade, may hold an
// unbounded one. The applier bounds again with the same functions (a no-op
// on a bounded value), so such a batch applies instead of failing with
// SQLSTATE 22001 on every retry (docs/schema.md#bounded-values).
void WriteHistory(pqxx::dbtransaction& tx, const std::vector<HistoryRow>& rows) {
  ExecValues<HistoryRow>(
      tx,
      "INSERT INTO flight_hst (flid, state_version, alcd, flno, mvin, sodt, payload_json, "
      "swept_at) VALUES ",
      " ON CONFLICT (flid, state_version) DO NOTHING", All(rows), [&](const HistoryRow& h) {
        return Text(tx, sis::BoundKey(h.flid, sis::kMaxFlidChars)) + "," + Int(h.state_version) +
               "," + TextOrNull(tx, BoundUtf8(h.alcd, kMaxHistoryAlcd)) + "," +
               TextOrNull(tx, BoundUtf8(h.flno, kMaxHistoryFlno)) + "," +
               TextOrNull(tx, BoundUtf8(h.mvin, kMaxHistoryMvin)) + "," +
               (h.sodt ? Time(*h.sodt) : std::string("NULL")) + "," + Text(tx, h.payload_json) +
               "," + Time(h.swept_micros);
      });
}

// Records each batch's digest; the error when PostgreSQL already holds a
// different one for the same end offset (the fold is not deterministic, or
// the state belongs to another history). One statement when every batch is
// new, as it is unless a batch is applied again (after PostgreSQL stopped
// inside a transaction's commit, or a restore): only then are the digests
// PostgreSQL already held read back and compared.
Status WriteFoldBatches(pqxx::dbtransaction& tx, const std::vector<PendingBatch>& batches) {
  static const std::string kInsert =
      "INSERT INTO fold_batch (last_offset, first_offset, fold_version, digest) "
      "SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[], $4::text[]) "
      "ON CONFLICT (last_offset) DO NOTHING RETURNING last_offset";
  std::map<std::int64_t, std::string> want;  // last_offset -> digest (hex)
  using T = PgElementType;
  std::array<PgBinaryArray, 4> c{PgBinaryArray(T::kInt8), PgBinaryArray(T::kInt8),
                                 PgBinaryArray(T::kInt8), PgBinaryArray(T::kText)};
  for (const PendingBatch& b : batches) {
    if (!want.emplace(b.last_offset, ToHex(b.digest)).second) continue;
    c[0].AddInt8(b.last_offset);
    c[1].AddInt8(b.first_offset);
    c[2].AddInt8(b.fold_version);
    c[3].AddText(want[b.last_offset]);
  }
  const pqxx::result inserted = ExecColumns(tx, kInsert, c);
  if (inserted.size() == want.size()) return Status::Ok();
  // The batches PostgreSQL held already: compare their digests.
  std::set<std::int64_t> added;
  for (const auto& row : inserted) added.insert(row[0].as<std::int64_t>());
  std::vector<std::int64_t> ends;
  for (const auto& [last, hex] : want) {
    if (added.count(last) == 0) ends.push_back(last);
  }
  const pqxx::result rows = ExecPrepared(
      tx, "SELECT last_offset, digest FROM fold_batch WHERE last_offset = ANY($1::bigint[])",
      PgArrayLiteral(ends));
  for (const auto& row : rows) {
    const auto last = row[0].as<std::int64_t>();
    const auto digest = row[1].as<std::string>();
    if (digest != want[last]) {
      return Status::Internal("fold_batch digest mismatch at offset " + std::to_string(last) +
                              ": PostgreSQL has " + digest + ", state has " + want[last]);
    }
  }
  if (rows.size() != ends.size()) {
    return Status::Internal("fold_batch: " + std::to_string(ends.size() - rows.size()) +
                            " of the batch rows just written are missing");
  }
  return Status::Ok();
}

// The rows of consecutive pending batches as one set, written in one
// transaction: events and history in log order; one proc_state row per
// message and one ref_master row per key, the latest (a later batch's row
// replaces an earlier one, as the statements' version rules would have: one
// INSERT ... ON CONFLICT DO UPDATE may not touch a row twice). A message's
// backfill_next_at stays its first outcome's time, as it would with one
// transaction per batch (it is kept once set).
struct Gathered {
  std::vector<PendingBatch> batches;
  std::vector<OutcomeRow> outcomes;
  std::vector<MicrosSinceEpoch> backfill_next;  // per outcome
  std::vector<EventRow> events;
  std::vector<ReferenceRow> references;
  std::vector<HistoryRow> history;
  std::unordered_map<std::int64_t, size_t> outcome_at;          // mailbox id -> index
  std::unordered_map<std::int64_t, MicrosSinceEpoch> received;  // mailbox id -> received_at
  std::map<std::pair<std::string, std::string>, size_t> reference_at;

  size_t Rows() const { return outcomes.size() + events.size(); }

  void Add(PendingBatch b) {
    for (OutcomeRow& o : b.outcomes) {
      if (o.received_micros != 0) received[o.outcome.mailbox_id] = o.received_micros;
      auto [it, fresh] = outcome_at.emplace(o.outcome.mailbox_id, outcomes.size());
      if (fresh) {
        backfill_next.push_back(o.outcome.decided_micros);
        outcomes.push_back(std::move(o));
      } else {
        outcomes[it->second] = std::move(o);
      }
    }
    for (EventRow& e : b.events) events.push_back(std::move(e));
    for (ReferenceRow& r : b.references) {
      auto [it, fresh] =
          reference_at.emplace(std::make_pair(r.rtype, RefKey(r)), references.size());
      if (fresh) {
        references.push_back(std::move(r));
      } else {
        references[it->second] = std::move(r);
      }
    }
    for (HistoryRow& h : b.history) history.push_back(std::move(h));
    b.outcomes.clear();
    b.events.clear();
    b.references.clear();
    b.history.clear();
    b.flights.clear();
    batches.push_back(std::move(b));
  }
};

struct ApplierMetrics {
  Counter* batches;
  Counter* transactions;
  Counter* outcomes;
  Counter* events;
  Counter* stalls;
  Counter* upserts;
  Gauge* offset;
};

const ApplierMetrics& GetMetrics() {
  static const ApplierMetrics m = [] {
    Metrics& g = Metrics::Global();
    return ApplierMetrics{
        g.GetCounter("msgx_applier_batches_total", "Pending batches committed to PostgreSQL"),
        g.GetCounter("msgx_applier_transactions_total",
                     "PostgreSQL transactions that committed pending batches"),
        g.GetCounter("msgx_applier_rows_total", "Rows sent to PostgreSQL by the applier",
                     {{"table", "proc_state"}}),
        g.GetCounter("msgx_applier_rows_total", "Rows sent to PostgreSQL by the applier",
                     {{"table", "msg_event"}}),
        g.GetCounter("msgx_applier_stalls_total", "Applier steps stalled by an outage"),
        g.GetCounter("msgx_applier_upserts_total",
                     "Applier inserts that met a row already there and ran as upserts"),
        g.GetGauge("msgx_applier_pg_offset", "pipeline.applied_offset as last seen")};
  }();
  return m;
}

// msgx_messages_total{state,error_class}: the outcomes committed, by state
// and error class ("none" when it has none).
void CountMessages(const std::vector<OutcomeRow>& outcomes) {
  std::map<std::pair<std::string_view, std::string_view>, std::int64_t> by;
  for (const auto& row : outcomes) {
    const Outcome& o = row.outcome;
    ++by[{OutcomeStateName(o.state),
          o.error_class.empty() ? std::string_view("none") : std::string_view(o.error_class)}];
  }
  for (const auto& [key, n] : by) {
    Metrics::Global()
        .GetCounter("msgx_messages_total", "Message outcomes committed to PostgreSQL",
                    {{"state", std::string(key.first)}, {"error_class", std::string(key.second)}})
        ->Add(n);
  }
}

}  // namespace

PgApplier::PgApplier(PgSession* pg, const StateStore* store, ApplierOptions options)
    : pg_(pg), store_(store), options_(std::move(options)) {}

Result<ApplyStep> PgApplier::Step() {
  const ApplierMetrics& metrics = GetMetrics();
  ApplyStep step;
  if (epoch_ == 0) {
    step.kind = ApplyStep::Kind::kStalled;
    step.error = "not leader";
    return step;
  }
  if (MSGX_FAILPOINT_ERROR("applier.step", "")) {
    return Status::Internal("failpoint applier.step: an injected bug");
  }
  auto meta = store_->ReadMeta();
  Status failure = meta.ok() ? Status::Ok() : meta.status();
  std::optional<Gathered> gathered;
  std::int64_t seen = -1;
  int upserts = 0;
  Status s = Status::Ok();
  if (failure.ok()) {
    s = pg_->Run([&](pqxx::dbtransaction& tx) {
      auto fail = [&](Status st) {
        failure = std::move(st);
        throw Abort();
      };
      gathered.reset();
      // The applied offset and the fence in one statement. Idle, the
      // transaction only reads, and checks the epoch without the lock that
      // would make it a write (stream/pg/pg_leadership.h). Whether it is
      // idle is known from the offset it reads; the statement guesses from
      // the last one this applier saw, and a wrong guess that there is
      // nothing to do (PostgreSQL went back) takes the lock after it.
      const bool expect_work = meta->applied_offset > pg_offset_;
      static const std::string kOffsetRead = FenceRowSql(EpochCheck::kRead, 1, ", applied_offset");
      static const std::string kOffsetLocked =
          FenceRowSql(EpochCheck::kLock, 1, ", applied_offset");
      const pqxx::result row =
          ExecPrepared(tx, expect_work ? kOffsetLocked : kOffsetRead, options_.pipeline);
      if (Status e = CheckFencedRead(row, options_.pipeline, epoch_, options_.log_uuid); !e.ok()) {
        fail(std::move(e));
      }
      const std::int64_t x = row[0][2].as<std::int64_t>();
      seen = x;
      const bool idle = x >= meta->applied_offset;
      if (idle) return;
      if (!expect_work) {
        if (Status e = CheckEpoch(tx, options_.pipeline, epoch_, options_.log_uuid); !e.ok()) {
          fail(std::move(e));
        }
      }
      auto covering = store_->PendingCovering(x + 1);
      if (!covering.ok()) fail(covering.status());
      if (!covering->has_value()) {
        fail(Status::Internal("pending batch for offset " + std::to_string(x + 1) +
                              " is gone (pruned after pipeline.pending-retention); rebuild the "
                              "state directory to re-create it"));
      }
      // A batch that starts before x+1 (PostgreSQL stopped inside it) is
      // applied whole: every write below is idempotent.
      gathered.emplace();
      gathered->Add(std::move(*covering.value()));
      // The batches after it, while the rows stay under the bound: one
      // commit for all of them (docs/commit-protocol.md#output-stages).
      while (gathered->Rows() < options_.max_rows &&
             gathered->batches.back().last_offset < meta->applied_offset) {
        auto next = store_->PendingCovering(gathered->batches.back().last_offset + 1);
        if (!next.ok()) fail(next.status());
        if (!next->has_value()) break;  // the next step reports it
        gathered->Add(std::move(*next.value()));
      }
      const PendingBatch& last = gathered->batches.back();
      upserts = 0;
      WriteOutcomes(tx, gathered->outcomes, gathered->backfill_next, &upserts);
      WriteEvents(tx, gathered->events, x, gathered->received, &upserts);
      WriteReferences(tx, gathered->references);
      WriteHistory(tx, gathered->history);
      if (Status e = WriteFoldBatches(tx, gathered->batches); !e.ok()) fail(std::move(e));
      const pqxx::result moved = ExecPrepared(
          tx,
          "UPDATE pipeline SET applied_offset = $1, fold_version = $2, updated_at = now() "
          "WHERE name = $3 AND applied_offset = $4",
          last.last_offset, last.fold_version, options_.pipeline, x);
      if (moved.affected_rows() != 1) {
        // X was read before CheckEpoch's row lock: should another writer
        // have moved it in between, retrying re-reads the offset.
        fail(Status::Infra("pipeline.applied_offset moved from " + std::to_string(x) +
                           " during the transaction"));
      }
    });
  }
  if (!failure.ok()) s = failure;
  if (!s.ok()) {
    if (s.error_class() != ErrorClass::kInfra) return s;
    metrics.stalls->Add(1);
    step.kind = ApplyStep::Kind::kStalled;
    step.error = s.ToString();
    return step;
  }
  if (!gathered) {
    if (seen < pg_offset_) {
      Logger("applier")->warn("pipeline.applied_offset went back from {} to {}", pg_offset_, seen);
    }
    pg_offset_ = seen;
    metrics.offset->Set(static_cast<double>(seen));
    step.kind = ApplyStep::Kind::kIdle;
    return step;
  }
  const std::int64_t first = gathered->batches.front().first_offset;
  const std::int64_t last = gathered->batches.back().last_offset;
  MSGX_FAILPOINT("applier.committed", std::to_string(last));
  if (seen < pg_offset_) {
    Logger("applier")->warn("pipeline.applied_offset went back from {} to {}; re-applied [{}, {}]",
                            pg_offset_, seen, first, last);
  }
  pg_offset_ = last;
  step.kind = ApplyStep::Kind::kApplied;
  step.first = first;
  step.last = last;
  step.batches = static_cast<int>(gathered->batches.size());
  step.upserts = upserts;
  step.outcomes = static_cast<int>(gathered->outcomes.size());
  step.events = static_cast<int>(gathered->events.size());
  for (const EventRow& e : gathered->events) {
    if (std::find(step.event_targets.begin(), step.event_targets.end(), e.target) ==
        step.event_targets.end()) {
      step.event_targets.push_back(e.target);
    }
  }
  step.caught_up = last >= meta->applied_offset;
  metrics.batches->Add(step.batches);
  metrics.upserts->Add(step.upserts);
  metrics.transactions->Add(1);
  metrics.outcomes->Add(step.outcomes);
  CountMessages(gathered->outcomes);
  metrics.events->Add(step.events);
  metrics.offset->Set(static_cast<double>(pg_offset_));
  return step;
}

Status PgApplier::ShowFailedHead(const FailedHead& head) {
  if (epoch_ == 0) return Status::Infra("not leader");
  static const std::string kSql =
      "INSERT INTO proc_state AS p (msg_id, state, attempts, next_attempt_at, error_class, "
      "last_error, updated_at) VALUES ($1, 'FAILED', $2, $3::timestamptz, $4, $5, "
      "$6::timestamptz) ON CONFLICT (msg_id) DO UPDATE SET state = 'FAILED', "
      "attempts = EXCLUDED.attempts, next_attempt_at = EXCLUDED.next_attempt_at, "
      "error_class = EXCLUDED.error_class, last_error = EXCLUDED.last_error, "
      "updated_at = EXCLUDED.updated_at WHERE p.log_offset IS NULL AND p.state = 'FAILED'";
  auto time_or_null = [](MicrosSinceEpoch micros) -> std::optional<std::string> {
    if (micros == 0) return std::nullopt;
    return PgTimestamp(micros);
  };
  return RunFenced(pg_, options_.pipeline, epoch_, options_.log_uuid, [&](pqxx::dbtransaction& tx) {
    ExecPrepared(tx, kSql, head.mailbox_id, head.attempts, time_or_null(head.next_attempt_at),
                 head.error_class, BoundUtf8(head.error, kMaxLastError),
                 time_or_null(head.failed_at));
  });
}

}  // namespace msgx
