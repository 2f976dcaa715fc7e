// The applier against a real PostgreSQL (migrated with the real migrations)
// and a real StateStore holding hand-built pending batches: exact table
// contents, idempotent redo after PostgreSQL goes back, the replay rule of
// proc_state, the epoch fence, and the errors that must stop it.
#include "stream/apply/pg_applier.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "codecs/identity_key.h"
#include "state/digest.h"
#include "stream/pg/pg_leadership.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dirs.h"

namespace msgx {
namespace {

constexpr char kLog[] = "log-applier";
constexpr MicrosSinceEpoch kT0 = 1'700'000'000'000'000;  // 2023-11-14T22:13:20Z

Outcome MakeOutcome(std::int64_t id, OutcomeState state, std::int64_t log_offset,
                    MicrosSinceEpoch decided) {
  Outcome o;
  o.mailbox_id = id;
  o.state = state;
  o.log_offset = log_offset;
  o.message_offset = log_offset;
  o.decided_micros = decided;
  return o;
}

EventRow MakeEvent(std::string key, std::string target, std::string flid, std::int64_t version,
                   std::int64_t source) {
  EventRow e;
  e.event_key = std::move(key);
  e.target = std::move(target);
  e.partition_key = std::move(flid);
  e.event_type = "UPSERT";
  e.state_version = version;
  e.payload_json = R"({"event":")" + e.event_key + R"(","q":"it's"})";
  e.source_msg_id = source;
  e.created_micros = kT0 + version;
  return e;
}

// [0,2]: two outcomes, three events (the last from a sweep), one reference
// upsert, one flight_hst row.
PendingBatch FirstBatch() {
  PendingBatch b;
  b.first_offset = 0;
  b.last_offset = 2;
  b.fold_version = 3;
  b.digest = Sha256("batch-1");
  b.last_append_micros = kT0 + 2;
  Outcome ok = MakeOutcome(10, OutcomeState::kSucceeded, 0, kT0 + 100);
  ok.identity_key = "SNDR:7";
  Outcome dead = MakeOutcome(11, OutcomeState::kDead, 1, kT0 + 200);
  dead.error_class = "MALFORMED";
  dead.last_error = "bad xml";
  b.outcomes = {{ok, kT0 - 5, kT0 - 1}, {dead, 0, kT0 + 1}};
  b.events = {MakeEvent("0:0:0", "KAFKA:schd", "F1", 0, 10),
              MakeEvent("0:0:1", "KAFKA:ref", "AIRL|LH", 0, 10),
              MakeEvent("2:0:0", "KAFKA:msg", "F9", 2, 0)};
  b.events[2].event_type = "DELETE";
  b.references = {{"AIRL", "LH", false, R"({"name":"Lufthansa"})", "AODB", 0, kT0 + 7}};
  b.history = {{"F9", 2, "LH", "400", "A", kT0 - 86'400'000'000, R"({"FLID":"F9"})", kT0 + 2}};
  return b;
}

// [3,10]: one outcome, events whose keys sort against their log order
// ("10:…" < "9:…"), the reference of batch 1 deleted, a new one with no
// source (the column default).
PendingBatch SecondBatch() {
  PendingBatch b;
  b.first_offset = 3;
  b.last_offset = 10;
  b.fold_version = 3;
  b.digest = Sha256("batch-2");
  b.last_append_micros = kT0 + 10;
  b.outcomes = {{MakeOutcome(12, OutcomeState::kSkipped, 9, kT0 + 300), kT0, kT0 + 9}};
  b.outcomes[0].outcome.last_error = "duplicate";
  b.events = {MakeEvent("9:0:0", "KAFKA:msg", "F1", 9, 12),
              MakeEvent("10:0:0", "KAFKA:msg", "F2", 10, 12)};
  b.references = {{"ABDG", "X", false, R"({"k":"X"})", "", 9, kT0 + 9},
                  {"AIRL", "LH", true, "", "", 10, kT0 + 10}};
  return b;
}

class PgApplierTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    db_ = "applier_" + std::to_string(++n_);
    url_ = testing::CreateMigratedDatabase(pg_, db_);
    auto dir = testing::MakeOwnedTempDir("applier", std::nullopt);
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = *dir;
    auto store = StateStore::Open(dir_ + "/state", {.sync = false, .read_only = false});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store.value());
    leader_ = std::make_unique<PgLeadership>(url_, kLog);
    auto got = leader_->TryAcquire();
    ASSERT_TRUE(got.ok() && got->leader) << got.status().ToString();
    session_ = std::make_unique<PgSession>(url_);
    // One batch per transaction, so each step's range is the batch's; the
    // gathering of several is tested on its own.
    UseApplier(1);
  }

  void UseApplier(size_t max_rows) {
    applier_ = std::make_unique<PgApplier>(session_.get(), store_.get(),
                                           ApplierOptions{"main", kLog, max_rows});
    applier_->set_epoch(leader_->epoch());
  }

  void TearDown() override {
    applier_.reset();
    session_.reset();
    leader_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // What the fold does: the batch's state and its pending record in one
  // commit.
  void Fold(const PendingBatch& b) {
    BatchWrite w;
    w.meta.applied_offset = b.last_offset;
    w.meta.fold_version = b.fold_version;
    w.meta.digest = b.digest;
    w.pending = b;
    ASSERT_TRUE(store_->Commit(w).ok());
  }

  ApplyStep MustStep() {
    auto r = applier_->Step();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (r.ok()) return *r;
    ApplyStep failed;
    failed.kind = ApplyStep::Kind::kStalled;
    failed.error = "error";
    return failed;
  }

  ApplyStep ExpectApplied(std::int64_t first, std::int64_t last) {
    ApplyStep s = MustStep();
    EXPECT_EQ(s.kind, ApplyStep::Kind::kApplied) << s.error;
    EXPECT_EQ(s.first, first);
    EXPECT_EQ(s.last, last);
    return s;
  }

  std::string Sql(const std::string& q) { return pg_->Psql(db_, q); }

  // Every column the applier writes, in a fixed order; times in
  // microseconds after kT0, NULL as '~'.
  std::string Tables() {
    return Sql(
        "SELECT msg_id, state, coalesce(identity_key, '~'), attempts, "
        "coalesce(error_class, '~'), coalesce(last_error, '~'), "
        "coalesce(prev_error, '~'), " +
        Us("updated_at") + ", " + Us("received_at") + ", " + Us("enqueued_at") + ", log_offset, " +
        Us("backfill_next_at") + ", " + Us("backfill_at") +
        " FROM proc_state ORDER BY msg_id;"
        "SELECT event_key, target, partition_key, event_type, state_version, "
        "payload_json, " +
        Us("created_at") + ", coalesce(source_msg_id::text, '~'), " + Us("received_at") +
        ", state FROM msg_event ORDER BY event_id;"
        "SELECT rtype, rkey, payload_json, source, " +
        Us("refreshed_at") +
        ", state_version FROM ref_master ORDER BY rtype, rkey;"
        "SELECT flid, state_version, alcd, flno, mvin, " +
        Us("sodt") + ", payload_json, " + Us("swept_at") +
        " FROM flight_hst ORDER BY flid, state_version;"
        "SELECT first_offset, last_offset, fold_version, digest FROM fold_batch "
        "ORDER BY last_offset;"
        "SELECT applied_offset, fold_version FROM pipeline;");
  }

  // A TIMESTAMPTZ column as microseconds after kT0, or '~' for NULL.
  static std::string Us(const std::string& column) {
    return "coalesce(((extract(epoch FROM " + column + ") * 1000000)::bigint - " +
           std::to_string(kT0) + ")::text, '~')";
  }

  static int n_;
  std::string db_;
  std::string url_;
  std::string dir_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<PgLeadership> leader_;
  std::unique_ptr<PgSession> session_;
  std::unique_ptr<PgApplier> applier_;
};
int PgApplierTest::n_ = 0;

TEST_F(PgApplierTest, AppliesBatchesInOrderWithExactRows) {
  EXPECT_EQ(MustStep().kind, ApplyStep::Kind::kIdle);  // nothing folded yet
  EXPECT_EQ(applier_->pg_offset(), -1);
  Fold(FirstBatch());
  Fold(SecondBatch());

  ApplyStep first = MustStep();
  EXPECT_EQ(first.kind, ApplyStep::Kind::kApplied) << first.error;
  EXPECT_EQ(first.first, 0);
  EXPECT_EQ(first.last, 2);
  EXPECT_EQ(first.outcomes, 2);
  EXPECT_EQ(first.events, 3);
  // The dispatchers to wake, each once; the second batch is still to do.
  EXPECT_EQ(first.event_targets,
            (std::vector<std::string>{"KAFKA:schd", "KAFKA:ref", "KAFKA:msg"}));
  EXPECT_FALSE(first.caught_up);
  EXPECT_EQ(applier_->pg_offset(), 2);
  EXPECT_EQ(Sql("SELECT applied_offset FROM pipeline"), "2\n");
  ExpectApplied(3, 10);
  EXPECT_EQ(applier_->pg_offset(), 10);
  EXPECT_EQ(MustStep().kind, ApplyStep::Kind::kIdle);

  const std::string fold_batch = "0|2|3|" + ToHex(Sha256("batch-1")) + "\n" +  //
                                 "3|10|3|" + ToHex(Sha256("batch-2")) + "\n";
  const std::string pipeline = "10|3\n";
  EXPECT_EQ(
      Tables(),
      // proc_state
      "10|SUCCEEDED|SNDR:7|1|~|~|~|100|-5|-1|0|100|~\n"
      "11|DEAD|~|1|MALFORMED|bad xml|~|200|~|1|1|200|~\n"
      "12|SKIPPED|~|1|~|duplicate|~|300|0|9|9|300|~\n"
      // msg_event, in event_id order = log order; received_at from
      // the source's outcome (none for the sweep's event)
      "0:0:0|KAFKA:schd|F1|UPSERT|0|{\"event\":\"0:0:0\",\"q\":\"it's\"}|0|10|-5|PENDING\n"
      "0:0:1|KAFKA:ref|AIRL|LH|UPSERT|0|{\"event\":\"0:0:1\",\"q\":\"it's\"}|0|10|-5|PENDING\n"
      "2:0:0|KAFKA:msg|F9|DELETE|2|{\"event\":\"2:0:0\",\"q\":\"it's\"}|2|~|~|PENDING\n"
      "9:0:0|KAFKA:msg|F1|UPSERT|9|{\"event\":\"9:0:0\",\"q\":\"it's\"}|9|12|0|PENDING\n"
      "10:0:0|KAFKA:msg|F2|UPSERT|10|{\"event\":\"10:0:0\",\"q\":\"it's\"}|10|12|0|PENDING\n"
      // ref_master: AIRL|LH deleted by batch 2, ABDG|X with the default source
      "ABDG|X|{\"k\":\"X\"}|AODB|9|9\n"
      // flight_hst
      "F9|2|LH|400|A|-86400000000|{\"FLID\":\"F9\"}|2\n" +
          fold_batch + pipeline);
  EXPECT_EQ(Sql("SELECT string_agg(event_key, ',' ORDER BY event_id) FROM msg_event"),
            "0:0:0,0:0:1,2:0:0,9:0:0,10:0:0\n");
}

// [11,12]: message 12 decided again (a later log offset) and ABDG|X
// changed: the rows of an earlier batch that one transaction must replace.
PendingBatch ThirdBatch() {
  PendingBatch b;
  b.first_offset = 11;
  b.last_offset = 12;
  b.fold_version = 3;
  b.digest = Sha256("batch-3");
  b.last_append_micros = kT0 + 12;
  b.outcomes = {{MakeOutcome(12, OutcomeState::kSucceeded, 12, kT0 + 400), kT0, kT0 + 12}};
  b.events = {MakeEvent("12:0:0", "KAFKA:msg", "F1", 12, 12)};
  b.references = {{"ABDG", "X", false, R"({"k":"Y"})", "", 12, kT0 + 12}};
  return b;
}

TEST_F(PgApplierTest, OneTransactionGathersConsecutiveBatchesUnderItsRowBound) {
  Fold(FirstBatch());   // 2 outcomes + 3 events
  Fold(SecondBatch());  // 1 + 2
  Fold(ThirdBatch());   // 1 + 1
  // A bound of 4 rows: the first batch (5) goes alone; the second (3) is
  // under it, so the third joins it.
  UseApplier(4);
  ApplyStep s = MustStep();
  EXPECT_EQ(s.kind, ApplyStep::Kind::kApplied);
  EXPECT_EQ(s.first, 0);
  EXPECT_EQ(s.last, 2);
  EXPECT_EQ(s.batches, 1);
  s = MustStep();
  EXPECT_EQ(s.kind, ApplyStep::Kind::kApplied);
  EXPECT_EQ(s.first, 3);
  EXPECT_EQ(s.last, 12);
  EXPECT_EQ(s.batches, 2);
  EXPECT_EQ(s.outcomes, 1);  // message 12 once, its later outcome
  EXPECT_EQ(s.events, 3);
  EXPECT_EQ(s.event_targets, std::vector<std::string>{"KAFKA:msg"});  // once for 3 events
  EXPECT_TRUE(s.caught_up);  // offset 12 is all the state store holds
  EXPECT_EQ(MustStep().kind, ApplyStep::Kind::kIdle);
  const std::string gathered = Tables();

  // The default bound takes all three at once, and the tables are those of
  // one batch per transaction.
  Sql("TRUNCATE proc_state, msg_event, ref_master, flight_hst, fold_batch;"
      "UPDATE pipeline SET applied_offset = -1");
  UseApplier(ApplierOptions{}.max_rows);
  s = MustStep();
  EXPECT_EQ(s.first, 0);
  EXPECT_EQ(s.last, 12);
  EXPECT_EQ(s.batches, 3);
  EXPECT_EQ(MustStep().kind, ApplyStep::Kind::kIdle);
  // event_id is a sequence: compare the rows without it.
  EXPECT_EQ(Tables(), gathered);
  UseApplier(1);
  Sql("TRUNCATE proc_state, msg_event, ref_master, flight_hst, fold_batch;"
      "UPDATE pipeline SET applied_offset = -1");
  ExpectApplied(0, 2);
  ExpectApplied(3, 10);
  ExpectApplied(11, 12);
  EXPECT_EQ(Tables(), gathered);
  EXPECT_EQ(Sql("SELECT msg_id, state, log_offset FROM proc_state WHERE msg_id = 12"),
            "12|SUCCEEDED|12\n");
  EXPECT_EQ(Sql("SELECT payload_json, state_version FROM ref_master WHERE rkey = 'X'"),
            "{\"k\":\"Y\"}|12\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM fold_batch"), "3\n");
}

// The big tables' rows go in as plain INSERTs; a statement that meets rows
// already there runs again as its upsert (ApplyStep::upserts), and the
// rules of the upsert decide, row by row, as before.
TEST_F(PgApplierTest, ARedoAfterPostgresWentBackIsHarmless) {
  Fold(FirstBatch());
  Fold(SecondBatch());
  EXPECT_EQ(ExpectApplied(0, 2).upserts, 0);
  EXPECT_EQ(ExpectApplied(3, 10).upserts, 0);
  const std::string before = Tables();
  const std::string ids =
      Sql("SELECT string_agg(event_id::text, ',' ORDER BY event_id) "
          "FROM msg_event");

  // A point-in-time restore to before everything: both batches again, each
  // meeting its outcomes and its events.
  Sql("UPDATE pipeline SET applied_offset = -1");
  EXPECT_EQ(ExpectApplied(0, 2).upserts, 2);
  EXPECT_EQ(applier_->pg_offset(), 2);
  EXPECT_EQ(ExpectApplied(3, 10).upserts, 2);
  EXPECT_EQ(MustStep().kind, ApplyStep::Kind::kIdle);
  EXPECT_EQ(Tables(), before);
  EXPECT_EQ(Sql("SELECT string_agg(event_id::text, ',' ORDER BY event_id) FROM msg_event"), ids);

  // Back to the middle of batch 1: the whole batch is applied again.
  Sql("UPDATE pipeline SET applied_offset = 1");
  EXPECT_EQ(ExpectApplied(0, 2).upserts, 2);
  EXPECT_EQ(Sql("SELECT applied_offset FROM pipeline"), "2\n");
  ExpectApplied(3, 10);
  EXPECT_EQ(Tables(), before);
}

// A batch that straddles pipeline.applied_offset X is applied whole, except
// its events at or below X: PostgreSQL had them, and the event-retention
// job may have deleted them since (docs/jobs.md#event-retention).
TEST_F(PgApplierTest, ABatchThatStraddlesTheOffsetBringsNoCompactedEventBack) {
  Fold(FirstBatch());
  ExpectApplied(0, 2);
  ASSERT_NE(Sql("SELECT count(*) FROM msg_event WHERE state_version <= 1"), "0\n");
  const std::string above = Sql("SELECT count(*) FROM msg_event WHERE state_version > 1");
  Sql("DELETE FROM msg_event WHERE state_version <= 1");  // compacted
  Sql("DELETE FROM msg_event WHERE state_version > 1");   // lost with a restore
  Sql("UPDATE pipeline SET applied_offset = 1");
  ExpectApplied(0, 2);
  EXPECT_EQ(Sql("SELECT count(*) FROM msg_event WHERE state_version <= 1"), "0\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM msg_event WHERE state_version > 1"), above);
}

TEST_F(PgApplierTest, AnOutcomeReplacesTheRowOnlyFromALaterLogOffset) {
  PendingBatch b1 = FirstBatch();
  b1.events.clear();
  Fold(b1);
  ExpectApplied(0, 2);

  // A replay of mailbox 11 decided at offset 5 supersedes its DEAD outcome;
  // backfill_next_at keeps the first outcome's intent.
  PendingBatch b2;
  b2.first_offset = 3;
  b2.last_offset = 5;
  b2.digest = Sha256("replay");
  Outcome replay = MakeOutcome(11, OutcomeState::kSucceeded, 5, kT0 + 500);
  replay.prev_error = "MALFORMED: bad xml";
  replay.message_offset = 1;
  b2.outcomes = {{replay, 0, kT0 + 1}};
  Fold(b2);
  ExpectApplied(3, 5);
  const std::string query =
      "SELECT msg_id, state, coalesce(error_class, '~'), coalesce(last_error, '~'), "
      "coalesce(prev_error, '~'), log_offset, " +
      Us("updated_at") + ", " + Us("backfill_next_at") + " FROM proc_state ORDER BY msg_id";
  const std::string replayed =
      "10|SUCCEEDED|~|~|~|0|100|100\n"
      "11|SUCCEEDED|~|~|MALFORMED: bad xml|5|500|200\n";
  EXPECT_EQ(Sql(query), replayed);

  // An outcome from an earlier log offset than the row's does not win; an
  // ARCHIVED shadow is replaced by one from a later offset (a replay:
  // docs/jobs.md#proc-state-archive; the same or an earlier offset leaves
  // it, proc_state_archive_test.cc).
  Sql("UPDATE proc_state SET state = 'ARCHIVED' WHERE msg_id = 10");
  PendingBatch b3;
  b3.first_offset = 6;
  b3.last_offset = 6;
  b3.digest = Sha256("late");
  Outcome earlier = MakeOutcome(11, OutcomeState::kDead, 4, kT0 + 600);
  earlier.error_class = "CODEC_ERROR";
  b3.outcomes = {{MakeOutcome(10, OutcomeState::kDead, 6, kT0 + 700), 0, 0}, {earlier, 0, 0}};
  Fold(b3);
  ExpectApplied(6, 6);
  const std::string after =
      "10|DEAD|~|~|~|6|700|100\n"
      "11|SUCCEEDED|~|~|MALFORMED: bad xml|5|500|200\n";
  EXPECT_EQ(Sql(query), after);

  // Nor does another outcome from the same offset (a redo never rewrites).
  PendingBatch b4;
  b4.first_offset = 7;
  b4.last_offset = 7;
  b4.digest = Sha256("same");
  Outcome same = MakeOutcome(11, OutcomeState::kSkipped, 5, kT0 + 800);
  same.last_error = "other";
  b4.outcomes = {{same, 0, 0}};
  Fold(b4);
  ExpectApplied(7, 7);
  EXPECT_EQ(Sql(query), after);
}

// Seed mode's held head (docs/fold.md#seed-mode) is FAILED in proc_state,
// with its attempts and next attempt, until its terminal outcome from the
// log replaces it; a post that comes after that outcome changes nothing,
// nor does one for a message an outcome from the log has reached.
TEST_F(PgApplierTest, AHeldHeadIsFailedUntilItsOutcomeLands) {
  Fold(FirstBatch());
  ExpectApplied(0, 2);
  const std::string query =
      "SELECT msg_id, state, attempts, " + Us("next_attempt_at") +
      ", coalesce(error_class, '~'), coalesce(last_error, '~'), coalesce(log_offset::text, '~'), " +
      Us("updated_at") + ", " + Us("backfill_next_at") +
      " FROM proc_state WHERE msg_id IN (10, 13) ORDER BY msg_id";
  // A post without a next attempt (the head is being exhausted)...
  FailedHead held{13, 3, 1, kT0 + 1000, 0, "UNSUPPORTED", "no handler for FLOP-ZZZZ"};
  ASSERT_TRUE(applier_->ShowFailedHead(held).ok());
  EXPECT_EQ(Sql(query),
            "10|SUCCEEDED|1|~|~|~|0|100|100\n"
            "13|FAILED|1|~|UNSUPPORTED|no handler for FLOP-ZZZZ|~|1000|~\n");
  // ... and a later one with a next attempt replaces it.
  held.attempts = 2;
  held.failed_at = kT0 + 2000;
  held.next_attempt_at = kT0 + 5000;
  ASSERT_TRUE(applier_->ShowFailedHead(held).ok());
  EXPECT_EQ(Sql(query),
            "10|SUCCEEDED|1|~|~|~|0|100|100\n"
            "13|FAILED|2|5000|UNSUPPORTED|no handler for FLOP-ZZZZ|~|2000|~\n");

  PendingBatch b;
  b.first_offset = 3;
  b.last_offset = 4;
  b.digest = Sha256("exhausted");
  Outcome dead = MakeOutcome(13, OutcomeState::kDead, 4, kT0 + 3000);
  dead.message_offset = 3;
  dead.attempts = 2;
  dead.error_class = "EXHAUSTED";
  dead.last_error = "exhausted:max-attempts 2: UNSUPPORTED: no handler for FLOP-ZZZZ";
  b.outcomes = {{dead, 0, kT0 + 3}};
  Fold(b);
  EXPECT_EQ(ExpectApplied(3, 4).upserts, 1);  // the FAILED row was there
  const std::string ended =
      "10|SUCCEEDED|1|~|~|~|0|100|100\n"
      "13|DEAD|2|~|EXHAUSTED|exhausted:max-attempts 2: UNSUPPORTED: no handler for "
      "FLOP-ZZZZ|4|3000|3000\n";
  EXPECT_EQ(Sql(query), ended);
  // A post read before the outcome landed, written after it; and one for a
  // message that has its outcome.
  ASSERT_TRUE(applier_->ShowFailedHead(held).ok());
  ASSERT_TRUE(applier_->ShowFailedHead(FailedHead{10, 0, 1, kT0 + 4000, 0, "X", "y"}).ok());
  EXPECT_EQ(Sql(query), ended);

  // Not leading: nothing written.
  PgApplier follower(session_.get(), store_.get(), ApplierOptions{"main", kLog});
  const Status not_leader = follower.ShowFailedHead(FailedHead{14, 5, 1, kT0, kT0, "X", "y"});
  EXPECT_EQ(not_leader.error_class(), ErrorClass::kInfra) << not_leader.ToString();
  EXPECT_EQ(Sql("SELECT count(*) FROM proc_state WHERE msg_id = 14"), "0\n");
}

TEST_F(PgApplierTest, ARefMasterRowChangesOnlyFromItsVersionOnward) {
  PendingBatch b1 = FirstBatch();
  b1.references = {{"AIRL", "BA", false, "{}", "AODB", 1, kT0},
                   {"AIRL", "LH", false, "{}", "AODB", 0, kT0},
                   {"AIRL", "XX", false, "{}", "AODB", 1, kT0}};
  Fold(b1);
  ExpectApplied(0, 2);
  // Rows newer than the batches that follow.
  Sql("UPDATE ref_master SET state_version = 20, payload_json = '{\"newer\":1}' "
      "WHERE rkey IN ('BA', 'LH')");
  const std::string query =
      "SELECT rkey, payload_json, state_version FROM ref_master ORDER BY rkey";
  const std::string newer =
      "BA|{\"newer\":1}|20\n"
      "LH|{\"newer\":1}|20\n"
      "XX|{}|1\n";

  PendingBatch older;
  older.first_offset = 3;
  older.last_offset = 4;
  older.digest = Sha256("older");
  older.references = {{"AIRL", "BA", true, "", "", 4, kT0},
                      {"AIRL", "LH", false, "{\"older\":1}", "AODB", 3, kT0}};
  Fold(older);
  ExpectApplied(3, 4);
  EXPECT_EQ(Sql(query), newer);

  PendingBatch newest;
  newest.first_offset = 5;
  newest.last_offset = 25;
  newest.digest = Sha256("newest");
  newest.references = {{"AIRL", "BA", true, "", "", 20, kT0},
                       {"AIRL", "LH", false, "{\"newest\":1}", "AODB", 25, kT0}};
  Fold(newest);
  ExpectApplied(5, 25);
  EXPECT_EQ(Sql(query),
            "LH|{\"newest\":1}|25\n"
            "XX|{}|1\n");
}

TEST_F(PgApplierTest, ALargeBatchIsChunkedAndKeepsLogOrder) {
  // More rows than one statement takes (2000): three statements per table.
  constexpr int kRows = 4500;
  PendingBatch b;
  b.first_offset = 0;
  b.last_offset = kRows - 1;
  b.digest = Sha256("large");
  for (int i = 0; i < kRows; ++i) {
    b.outcomes.push_back({MakeOutcome(1000 + i, OutcomeState::kSucceeded, i, kT0 + i), kT0, kT0});
    b.events.push_back(MakeEvent(std::to_string(i) + ":0:0", "KAFKA:msg", "F", i, 1000 + i));
  }
  Fold(b);
  ApplyStep s = MustStep();
  EXPECT_EQ(s.kind, ApplyStep::Kind::kApplied) << s.error;
  EXPECT_EQ(s.outcomes, kRows);
  EXPECT_EQ(s.events, kRows);
  EXPECT_EQ(Sql("SELECT count(*), min(msg_id), max(msg_id) FROM proc_state"), "4500|1000|5499\n");
  // event_id follows the batch's order, which the keys' text order is not.
  EXPECT_EQ(Sql("SELECT count(*), count(*) FILTER (WHERE state_version = n) FROM "
                "(SELECT state_version, row_number() OVER (ORDER BY event_id) - 1 AS n "
                "FROM msg_event) e"),
            "4500|4500\n");
}

TEST_F(PgApplierTest, AStaleEpochOrNoLeadershipWritesNothing) {
  Fold(FirstBatch());
  PgApplier follower(session_.get(), store_.get(), ApplierOptions{"main", kLog});
  ApplyStep not_leader = *follower.Step();
  EXPECT_EQ(not_leader.kind, ApplyStep::Kind::kStalled);
  EXPECT_EQ(not_leader.error, "not leader");

  const std::int64_t old_epoch = leader_->epoch();
  leader_->Release();
  PgLeadership successor(url_, kLog);
  for (int i = 0; i < 200 && !successor.leader(); ++i) {
    auto r = successor.TryAcquire();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    if (!r->leader) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(successor.leader());
  ASSERT_NE(successor.epoch(), old_epoch);

  ApplyStep stale = MustStep();
  EXPECT_EQ(stale.kind, ApplyStep::Kind::kStalled);
  EXPECT_NE(stale.error.find("stale epoch"), std::string::npos) << stale.error;
  EXPECT_EQ(Sql("SELECT (SELECT count(*) FROM proc_state) + (SELECT count(*) FROM msg_event) + "
                "(SELECT count(*) FROM fold_batch), (SELECT applied_offset FROM pipeline)"),
            "0|-1\n");

  applier_->set_epoch(successor.epoch());
  ExpectApplied(0, 2);
}

TEST_F(PgApplierTest, ADigestMismatchStopsWithTheOffset) {
  Fold(FirstBatch());
  const std::string other(64, 'f');
  Sql("INSERT INTO fold_batch (last_offset, first_offset, fold_version, digest) "
      "VALUES (2, 0, 3, '" +
      other + "')");
  auto r = applier_->Step();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInternal);
  EXPECT_EQ(r.status().message(), "fold_batch digest mismatch at offset 2: PostgreSQL has " +
                                      other + ", state has " + ToHex(Sha256("batch-1")));
  EXPECT_EQ(Sql("SELECT (SELECT count(*) FROM proc_state) + (SELECT count(*) FROM msg_event), "
                "(SELECT applied_offset FROM pipeline)"),
            "0|-1\n");

  // The same digest is a redo, not a mismatch.
  Sql("UPDATE fold_batch SET digest = '" + ToHex(Sha256("batch-1")) + "'");
  ExpectApplied(0, 2);
}

TEST_F(PgApplierTest, APrunedPendingBatchIsAClearError) {
  PendingBatch b = FirstBatch();
  b.last_append_micros = 1;
  Fold(b);
  auto pruned = store_->PrunePending(2, 2);
  ASSERT_TRUE(pruned.ok());
  ASSERT_EQ(*pruned, 1);
  auto r = applier_->Step();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInternal);
  EXPECT_EQ(r.status().message(),
            "pending batch for offset 0 is gone (pruned after pipeline.pending-retention); "
            "rebuild the state directory to re-create it");
}

TEST_F(PgApplierTest, ADataErrorIsABugNotAnOutage) {
  PendingBatch b = FirstBatch();
  b.outcomes[0].outcome.error_class = std::string(21, 'X');  // VARCHAR(20): SQLSTATE 22001
  Fold(b);
  auto r = applier_->Step();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInternal);
  EXPECT_NE(r.status().message().find("22001"), std::string::npos) << r.status().message();
  EXPECT_EQ(Sql("SELECT applied_offset FROM pipeline"), "-1\n");
}

TEST_F(PgApplierTest, APostgresOutageStallsAndThenApplies) {
  Fold(FirstBatch());
  pg_->Stop();
  ApplyStep down = MustStep();
  EXPECT_EQ(down.kind, ApplyStep::Kind::kStalled);
  EXPECT_NE(down.error.find("INFRA"), std::string::npos) << down.error;
  pg_->Restart();
  ExpectApplied(0, 2);
  EXPECT_EQ(Sql("SELECT count(*) FROM proc_state"), "2\n");
}

// A pending batch of an older fold version, written before keys were
// bounded, applies after an upgrade: the applier bounds with the fold's own
// functions instead of failing with SQLSTATE 22001 on every retry.
TEST_F(PgApplierTest, AnUnboundedKeyFromAnOlderFoldVersionStillApplies) {
  PendingBatch b = FirstBatch();
  b.fold_version = 1;
  const std::string long_key(300, 'K');
  const std::string long_flid(300, 'F');
  b.references = {{"AIRL", long_key, false, "{}", "AODB", 0, kT0}};
  b.history = {
      {long_flid, 2, "ALCD-TOO-LONG", std::string(40, 'N'), "ARR", std::nullopt, "{}", kT0 + 2}};
  Fold(b);
  ExpectApplied(0, 2);
  EXPECT_EQ(Sql("SELECT rkey FROM ref_master"),
            sis::BoundKey(long_key, sis::kMaxReferenceKeyChars) + "\n");
  EXPECT_EQ(Sql("SELECT flid || '|' || alcd || '|' || flno || '|' || mvin FROM flight_hst"),
            sis::BoundKey(long_flid, sis::kMaxFlidChars) + "|ALCD-TOO|" + std::string(16, 'N') +
                "|ARR\n");
}

// A database that went read-only (a standby after a failover, or
// default_transaction_read_only) and a terminated connection are outages:
// the applier stalls, charges nothing, and applies once they are over.
TEST_F(PgApplierTest, AReadOnlyDatabaseAndAKilledConnectionAreOutages) {
  Fold(FirstBatch());
  // Set from another database: a session of this one is read-only after it.
  pg_->Psql("postgres", "ALTER DATABASE " + db_ + " SET default_transaction_read_only = on");
  Sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db_ +
      "' AND pid <> pg_backend_pid()");
  ApplyStep first = MustStep();  // the killed connection (SQLSTATE 57P01 or a broken link)
  EXPECT_EQ(first.kind, ApplyStep::Kind::kStalled);
  ApplyStep read_only = MustStep();  // reconnected: now read-only (25006)
  EXPECT_EQ(read_only.kind, ApplyStep::Kind::kStalled);
  EXPECT_NE(read_only.error.find("25006"), std::string::npos) << read_only.error;
  EXPECT_EQ(Sql("SELECT count(*) FROM proc_state"), "0\n");
  pg_->Psql("postgres", "ALTER DATABASE " + db_ + " SET default_transaction_read_only = off");
  Sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '" + db_ +
      "' AND pid <> pg_backend_pid()");
  ApplyStep retry = MustStep();  // the connection killed to drop its read-only setting
  if (retry.kind == ApplyStep::Kind::kStalled) retry = MustStep();
  EXPECT_EQ(retry.kind, ApplyStep::Kind::kApplied) << retry.error;
  EXPECT_EQ(Sql("SELECT count(*) FROM proc_state"), "2\n");
}

// The SQLSTATE table of docs/operations.md#error-classes.
TEST(PgSqlStateClassTest, OutagesAndBugs) {
  for (const char* outage : {"08006", "08001", "40001", "40P01", "53100", "53300", "57P01", "57014",
                             "58030", "25006", "55P03", "55006", "28P01"}) {
    EXPECT_EQ(PgSqlStateClass(outage), ErrorClass::kInfra) << outage;
  }
  for (const char* bug : {"22001", "23505", "23503", "42P01", "42703", "XX000", "25P02"}) {
    EXPECT_EQ(PgSqlStateClass(bug), ErrorClass::kInternal) << bug;
  }
}

}  // namespace
}  // namespace msgx
