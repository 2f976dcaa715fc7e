// The proc_state archive job (stream/jobs/proc_state_archive.h) against a
// real PostgreSQL migrated with the real migrations
// (docs/jobs.md#proc-state-archive): only terminal rows whose mark is
// settled and whose updated_at is old enough move, in bounded batches,
// oldest first; the shadow keeps msg_id, identity_key and log_offset and the
// history row holds the old values; a second run moves nothing; the applier
// (driven directly, with a real StateStore) leaves a shadow ARCHIVED when a
// batch is applied again at the same or a lower offset, and replaces it with
// a replay's later outcome; a stale leader moves nothing. And the history's
// retention (stream/jobs/proc_state_hst_retention.h,
// docs/jobs.md#archive-retention): only history rows archived longer ago
// than the retention are deleted, in bounded batches, oldest first, the
// shadows stay; a stale leader deletes nothing.
#include "stream/jobs/proc_state_archive.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "base/clock.h"
#include "state/digest.h"
#include "state/state_store.h"
#include "stream/apply/pg_applier.h"
#include "stream/jobs/proc_state_hst_retention.h"
#include "stream/pg/pg_leadership.h"
#include "stream/pg/pg_session.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dirs.h"

namespace msgx {
namespace {

constexpr char kLog[] = "log-archive";
constexpr MicrosSinceEpoch kHour = 3'600'000'000;

class ArchiveTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    db_ = "archive_" + std::to_string(++n_);
    url_ = testing::CreateMigratedDatabase(pg_, db_);
    session_ = std::make_unique<PgSession>(url_);
    lead_ = std::make_unique<PgLeadership>(url_, kLog);
    auto led = lead_->TryAcquire();
    ASSERT_TRUE(led.ok() && led->leader) << led.status().ToString();
    epoch_ = led->epoch;
  }

  void TearDown() override {
    applier_.reset();
    store_.reset();
    if (!dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
  }

  std::string Sql(const std::string& q) { return pg_->Psql(db_, q); }

  // A time `hours` before the clock, as a timestamptz literal.
  std::string Ago(int hours) const {
    return "'" + PgTimestamp(clock_.NowMicros() - hours * kHour) + "'::timestamptz";
  }

  // A proc_state row with every column the archive clears filled in.
  void Row(std::int64_t id, const std::string& state, const std::string& mark, int age_hours) {
    const std::string i = std::to_string(id);
    Sql("INSERT INTO proc_state (msg_id, state, identity_key, attempts, next_attempt_at, "
        "error_class, last_error, prev_error, updated_at, received_at, enqueued_at, log_offset, "
        "backfill_at, backfill_next_at, backfill_attempts, backfill_error, "
        "backfill_abandoned_at, backfill_abandoned_reason, mark_state, mark_reason) VALUES (" +
        i + ", '" + state + "', 'SNDR:" + i + "', 3, " + Ago(age_hours) + ", 'CODEC', 'err " + i +
        "', 'prev " + i + "', " + Ago(age_hours) + ", " + Ago(age_hours + 2) + ", " +
        Ago(age_hours + 1) + ", " + std::to_string(100 + id) + ", " + Ago(age_hours) + ", " +
        Ago(age_hours) + ", 1, 'berr', " + Ago(age_hours) + ", 'gone', " +
        (mark.empty() ? std::string("NULL") : "'" + mark + "'") + ", 'why " + i + "')");
  }

  // proc_state as msg_id|state|identity_key|attempts|the cleared texts and
  // times|log_offset|mark_state ("~" for NULL).
  std::string Main() {
    return Sql(
        "SELECT msg_id, state, coalesce(identity_key, '~'), attempts, "
        "coalesce(error_class, '~') || coalesce(last_error, '~') || coalesce(prev_error, '~') "
        "|| coalesce(next_attempt_at::text, '~') || coalesce(received_at::text, '~') || "
        "coalesce(enqueued_at::text, '~') || coalesce(backfill_error, '~') || "
        "coalesce(backfill_abandoned_reason, '~') || coalesce(mark_reason, '~'), "
        "backfill_attempts, coalesce(log_offset::text, '~'), coalesce(mark_state, '~') "
        "FROM proc_state ORDER BY msg_id");
  }

  // proc_state_hst as msg_id|state|identity_key|attempts|error texts|
  // log_offset|mark_state|mark_reason|abandoned reason|archived_at set.
  std::string History() {
    return Sql(
        "SELECT msg_id, state, coalesce(identity_key, '~'), attempts, coalesce(error_class, "
        "'~'), coalesce(last_error, '~'), coalesce(prev_error, '~'), log_offset, "
        "coalesce(mark_state, '~'), coalesce(mark_reason, '~'), "
        "coalesce(backfill_abandoned_reason, '~'), received_at IS NOT NULL, "
        "archived_at = " +
        Ago(0) + " FROM proc_state_hst ORDER BY msg_id");
  }

  ProcStateArchive Job(int batch = 1000) {
    ProcStateArchiveOptions o;
    o.log_uuid = kLog;
    o.archive_after = Millis(24LL * 3'600'000);
    o.batch = batch;
    return ProcStateArchive(session_.get(), &clock_, o);
  }

  int MustStep(ProcStateArchive& job) {
    auto r = job.Step(epoch_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : -1;
  }

  // The history's retention, 10 days.
  ProcStateHstRetention Retention(int batch = 1000) {
    ProcStateHstRetentionOptions o;
    o.log_uuid = kLog;
    o.retention = Millis(10LL * 24 * 3'600'000);
    o.batch = batch;
    return ProcStateHstRetention(session_.get(), &clock_, o);
  }

  // Archives rows 1..n (settled, two days old), then sets row i's
  // archived_at to `days_ago[i - 1]` days before the clock.
  void ArchivedAgo(const std::vector<int>& days_ago) {
    for (std::size_t i = 0; i < days_ago.size(); ++i) {
      Row(static_cast<std::int64_t>(i + 1), "SUCCEEDED", "MARKED", 48);
    }
    ProcStateArchive job = Job();
    ASSERT_EQ(MustStep(job), static_cast<int>(days_ago.size()));
    for (std::size_t i = 0; i < days_ago.size(); ++i) {
      Sql("UPDATE proc_state_hst SET archived_at = " + Ago(days_ago[i] * 24) +
          " WHERE msg_id = " + std::to_string(i + 1));
    }
  }

  // The applier on a StateStore of its own (as pg_applier_test drives it).
  void OpenApplier() {
    auto dir = testing::MakeOwnedTempDir("archive", std::nullopt);
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = *dir;
    auto store = StateStore::Open(dir_ + "/state", {.sync = false, .read_only = false});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    store_ = std::move(store.value());
    applier_ =
        std::make_unique<PgApplier>(session_.get(), store_.get(), ApplierOptions{"main", kLog});
    applier_->set_epoch(epoch_);
  }

  // Folds and applies the batch [first, last] holding one outcome of `id`.
  void Apply(std::int64_t first, std::int64_t last, std::int64_t id, OutcomeState state,
             std::int64_t log_offset, MicrosSinceEpoch decided, const std::string& prev = "") {
    PendingBatch b;
    b.first_offset = first;
    b.last_offset = last;
    b.digest = Sha256("batch-" + std::to_string(last));
    Outcome o;
    o.mailbox_id = id;
    o.state = state;
    o.log_offset = log_offset;
    o.message_offset = log_offset;
    o.decided_micros = decided;
    o.identity_key = "SNDR:1";
    o.prev_error = prev;
    if (state == OutcomeState::kDead) {
      o.error_class = "MALFORMED";
      o.last_error = "bad xml";
    }
    b.outcomes = {{o, decided, decided}};
    BatchWrite w;
    w.meta.applied_offset = b.last_offset;
    w.meta.digest = b.digest;
    w.pending = b;
    ASSERT_TRUE(store_->Commit(w).ok());
    ApplyAgain(first, last);
  }

  // One applier step that must apply [first, last].
  void ApplyAgain(std::int64_t first, std::int64_t last) {
    auto r = applier_->Step();
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->kind, ApplyStep::Kind::kApplied) << r->error;
    EXPECT_EQ(r->first, first);
    EXPECT_EQ(r->last, last);
  }

  static int n_;
  std::string db_;
  std::string url_;
  std::string dir_;
  std::unique_ptr<PgSession> session_;
  std::unique_ptr<PgLeadership> lead_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<PgApplier> applier_;
  std::int64_t epoch_ = 0;
  ManualClock clock_{SystemClock::Default()->NowMicros()};
};
int ArchiveTest::n_ = 0;

TEST_F(ArchiveTest, OnlySettledOldTerminalRowsMoveInBoundedBatches) {
  Row(1, "SUCCEEDED", "MARKED", 50);
  Row(2, "DEAD", "MARKED_ELSEWHERE", 49);
  Row(3, "SKIPPED", "RECONCILED", 48);
  Row(4, "DEAD", "ABANDONED", 60);    // on the abandon list: stays
  Row(5, "SUCCEEDED", "", 60);        // mark still to do: stays
  Row(6, "SUCCEEDED", "MARKED", 23);  // younger than a day: stays for now
  Row(7, "FAILED", "MARKED", 60);     // not terminal: stays
  Row(8, "PENDING", "MARKED", 60);    // not terminal: stays
  ProcStateArchive job = Job(2);
  EXPECT_EQ(*job.Backlog(100), 3);
  EXPECT_EQ(*job.Backlog(2), 2);  // capped

  EXPECT_EQ(MustStep(job), 2);  // the two oldest
  EXPECT_EQ(Sql("SELECT msg_id FROM proc_state WHERE state = 'ARCHIVED' ORDER BY msg_id"),
            "1\n2\n");
  EXPECT_EQ(MustStep(job), 1);
  EXPECT_EQ(MustStep(job), 0);  // repeatable: nothing more moves
  EXPECT_EQ(*job.Backlog(100), 0);

  const std::string kept = "CODECerr 4prev 4";  // the start of a kept row's texts
  const std::string main = Main();
  EXPECT_NE(main.find("1|ARCHIVED|SNDR:1|0|~~~~~~~~~|0|101|MARKED\n"), std::string::npos) << main;
  EXPECT_NE(main.find("2|ARCHIVED|SNDR:2|0|~~~~~~~~~|0|102|MARKED_ELSEWHERE\n"), std::string::npos)
      << main;
  EXPECT_NE(main.find("3|ARCHIVED|SNDR:3|0|~~~~~~~~~|0|103|RECONCILED\n"), std::string::npos)
      << main;
  for (const char* id : {"4|DEAD", "5|SUCCEEDED", "6|SUCCEEDED", "7|FAILED", "8|PENDING"}) {
    EXPECT_NE(main.find(std::string(id) + "|SNDR:"), std::string::npos) << id << "\n" << main;
  }
  EXPECT_NE(main.find("4|DEAD|SNDR:4|3|" + kept), std::string::npos) << main;
  EXPECT_EQ(History(),
            "1|SUCCEEDED|SNDR:1|3|CODEC|err 1|prev 1|101|MARKED|why 1|gone|t|t\n"
            "2|DEAD|SNDR:2|3|CODEC|err 2|prev 2|102|MARKED_ELSEWHERE|why 2|gone|t|t\n"
            "3|SKIPPED|SNDR:3|3|CODEC|err 3|prev 3|103|RECONCILED|why 3|gone|t|t\n");

  // A day later row 6 is old enough; nothing else moves.
  clock_.Advance(std::chrono::hours(2));
  EXPECT_EQ(MustStep(job), 1);
  EXPECT_EQ(MustStep(job), 0);
  EXPECT_EQ(Sql("SELECT msg_id FROM proc_state WHERE state <> 'ARCHIVED' ORDER BY msg_id"),
            "4\n5\n7\n8\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM proc_state_hst"), "4\n");
}

TEST_F(ArchiveTest, AReAppliedOutcomeLeavesTheShadowAndAReplayReplacesIt) {
  OpenApplier();
  const MicrosSinceEpoch decided = clock_.NowMicros() - 48 * kHour;
  Apply(0, 2, 1, OutcomeState::kDead, 2, decided);
  Sql("UPDATE proc_state SET mark_state = 'MARKED' WHERE msg_id = 1");  // the mark job's part
  ProcStateArchive job = Job();
  EXPECT_EQ(MustStep(job), 1);
  const std::string shadow = "1|ARCHIVED|SNDR:1|0|~~~~~~~~~|0|2|MARKED\n";
  EXPECT_EQ(Main(), shadow);

  // PostgreSQL went back (a restore): the kept pending batch [0,2] is applied
  // again with the same outcome at the same offset.
  Sql("UPDATE pipeline SET applied_offset = -1");
  ApplyAgain(0, 2);
  EXPECT_EQ(Main(), shadow);
  // An outcome from a lower offset than the shadow's.
  Apply(3, 3, 1, OutcomeState::kSucceeded, 1, decided + 1);
  EXPECT_EQ(Main(), shadow);
  EXPECT_EQ(*job.Backlog(100), 0);

  EXPECT_EQ(History(), "1|DEAD|SNDR:1|1|MALFORMED|bad xml|~|2|MARKED|~|~|t|t\n");

  // A replay of the archived DEAD message is decided at a later offset: its
  // outcome replaces the shadow, and the settled mark stays (the row is not
  // marked twice).
  const MicrosSinceEpoch replayed = clock_.NowMicros() - 30 * kHour;
  Apply(4, 4, 1, OutcomeState::kSucceeded, 4, replayed, "MALFORMED: bad xml");
  EXPECT_EQ(Sql("SELECT state, identity_key, attempts, coalesce(error_class, '~'), "
                "prev_error, log_offset, received_at IS NOT NULL, mark_state, updated_at = " +
                Ago(30) + ", backfill_next_at = " + Ago(48) + " FROM proc_state"),
            "SUCCEEDED|SNDR:1|1|~|MALFORMED: bad xml|4|t|MARKED|t|t\n");
  // Settled and older than a day, it is archived again: the history row
  // now holds the later outcome.
  EXPECT_EQ(MustStep(job), 1);
  EXPECT_EQ(Main(), "1|ARCHIVED|SNDR:1|0|~~~~~~~~~|0|4|MARKED\n");
  EXPECT_EQ(History(), "1|SUCCEEDED|SNDR:1|1|~|~|MALFORMED: bad xml|4|MARKED|~|~|t|t\n");
  EXPECT_EQ(MustStep(job), 0);
}

TEST_F(ArchiveTest, TheRetentionDeletesOnlyOldHistoryInBatchesAndKeepsTheShadows) {
  // Archived 30, 12, 11, 10 (less one hour), 9 and 0 days ago.
  ArchivedAgo({30, 12, 11, 0, 9, 0});
  Sql("UPDATE proc_state_hst SET archived_at = " + Ago(10 * 24 - 1) + " WHERE msg_id = 4");
  ProcStateHstRetention retention = Retention(2);
  EXPECT_EQ(*retention.Backlog(100), 3);
  EXPECT_EQ(*retention.Backlog(1), 1);  // capped

  auto step = [&] {
    auto r = retention.Step(epoch_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : -1;
  };
  EXPECT_EQ(step(), 2);  // the two oldest
  EXPECT_EQ(Sql("SELECT msg_id FROM proc_state_hst ORDER BY msg_id"), "3\n4\n5\n6\n");
  EXPECT_EQ(step(), 1);
  EXPECT_EQ(step(), 0);  // repeatable
  EXPECT_EQ(Sql("SELECT msg_id FROM proc_state_hst ORDER BY msg_id"), "4\n5\n6\n");
  // Every shadow stays, with its identity and offset.
  EXPECT_EQ(Sql("SELECT msg_id, state, identity_key, log_offset FROM proc_state ORDER BY msg_id"),
            "1|ARCHIVED|SNDR:1|101\n2|ARCHIVED|SNDR:2|102\n3|ARCHIVED|SNDR:3|103\n"
            "4|ARCHIVED|SNDR:4|104\n5|ARCHIVED|SNDR:5|105\n6|ARCHIVED|SNDR:6|106\n");

  // Two hours later row 4 is past the retention too.
  clock_.Advance(std::chrono::hours(2));
  EXPECT_EQ(step(), 1);
  EXPECT_EQ(Sql("SELECT msg_id FROM proc_state_hst ORDER BY msg_id"), "5\n6\n");

  // A batch can read the index in its order (on a table this small the
  // planner would rather scan, hence enable_seqscan off).
  const std::string plan = Sql(
      "SET enable_seqscan = off; EXPLAIN SELECT msg_id FROM proc_state_hst WHERE archived_at < " +
      Ago(0) + " ORDER BY archived_at, msg_id LIMIT 1000");
  EXPECT_NE(plan.find("proc_state_hst_archived_idx"), std::string::npos) << plan;
}

// Each batch reads the index on after the last row the job deleted, in its
// run or a run before, not from the start past the dead entries of the rows
// deleted before; once an hour a batch reads from the oldest again, so a
// row skipped while locked goes then. The backlog counts from where the
// next batch reads.
TEST_F(ArchiveTest, TheRetentionReadsOnAfterItsLastDeleteAndFromTheOldestHourly) {
  ArchivedAgo({30, 29, 28, 27, 26, 25});
  ProcStateHstRetention retention = Retention(2);
  auto step = [&] {
    auto r = retention.Step(epoch_);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : -1;
  };
  {
    pqxx::connection other(url_);
    pqxx::work lock(other);
    lock.exec("SELECT 1 FROM proc_state_hst WHERE msg_id = 1 FOR UPDATE");
    EXPECT_EQ(step(), 2);  // 2 and 3: the oldest, 1, is locked
    lock.abort();
  }
  EXPECT_EQ(step(), 2);  // 4 and 5, after 3: not 1, though it is free now
  EXPECT_EQ(Sql("SELECT msg_id FROM proc_state_hst ORDER BY msg_id"), "1\n6\n");
  EXPECT_EQ(step(), 1);  // 6, short: the run ends
  // The next run, a minute later, reads on after 6.
  clock_.Advance(std::chrono::minutes(1));
  EXPECT_EQ(*retention.Backlog(100), 0);
  EXPECT_EQ(step(), 0);
  EXPECT_EQ(Sql("SELECT msg_id FROM proc_state_hst"), "1\n");
  // An hour after the first batch, from the oldest.
  clock_.Advance(std::chrono::minutes(59));
  EXPECT_EQ(*retention.Backlog(100), 1);
  EXPECT_EQ(step(), 1);
  EXPECT_EQ(Sql("SELECT count(*) FROM proc_state_hst"), "0\n");
}

TEST_F(ArchiveTest, AStaleLeaderDeletesNoHistory) {
  ArchivedAgo({30});
  ProcStateHstRetention retention = Retention();
  Sql("UPDATE pipeline SET leader_epoch = leader_epoch + 1");
  auto r = retention.Step(epoch_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfra);
  EXPECT_NE(r.status().message().find("stale epoch"), std::string::npos) << r.status().message();
  EXPECT_EQ(retention.Step(0).status().error_class(), ErrorClass::kInfra);
  EXPECT_EQ(Sql("SELECT count(*) FROM proc_state_hst"), "1\n");
}

TEST_F(ArchiveTest, AStaleLeaderMovesNothing) {
  Row(1, "SUCCEEDED", "MARKED", 50);
  ProcStateArchive job = Job();
  Sql("UPDATE pipeline SET leader_epoch = leader_epoch + 1");
  auto r = job.Step(epoch_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfra);
  EXPECT_NE(r.status().message().find("stale epoch"), std::string::npos) << r.status().message();
  EXPECT_EQ(job.Step(0).status().error_class(), ErrorClass::kInfra);  // not leading at all
  EXPECT_EQ(Sql("SELECT state FROM proc_state"), "SUCCEEDED\n");
  EXPECT_EQ(Sql("SELECT count(*) FROM proc_state_hst"), "0\n");
}

}  // namespace
}  // namespace msgx
