// The processed-mark job (stream/jobs/processed_mark.h) against a real
// PostgreSQL mailbox and msgx database (docs/jobs.md#processed-mark): only
// terminal rows are marked, only from NULL; a row marked before msgx is left
// as it is and settled MARKED_ELSEWHERE; a vanished row is ABANDONED at once;
// an account without UPDATE stalls the job, charging nothing, until the
// grant; a death between the mailbox write and the settle settles MARKED on
// the next run; a stale leader marks nothing; `msgx backfill --reconcile`.
#include "stream/jobs/processed_mark.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>

#include "base/clock.h"
#include "base/subprocess.h"
#include "stream/capture/mailbox_schema.h"
#include "stream/jobs/mark_reconcile.h"
#include "stream/jobs/pg_mailbox_marks.h"
#include "stream/pg/pg_leadership.h"
#include "stream/pg/pg_session.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

constexpr MicrosSinceEpoch kHour = 3'600'000'000;

class MarkJobTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    const std::string n = std::to_string(++n_);
    own_db_ = "mark_own_" + n;
    mailbox_db_ = "mark_mbox_" + n;
    url_ = testing::CreateMigratedDatabase(pg_, own_db_);
    pg_->CreateDatabase(mailbox_db_);
    pg_->Psql(mailbox_db_, kLocalMailboxDdl);
    session_ = std::make_unique<PgSession>(url_);
    lead_ = std::make_unique<PgLeadership>(url_, "log-M");
    auto led = lead_->TryAcquire();
    ASSERT_TRUE(led.ok() && led->leader);
    epoch_ = led->epoch;
    UseMailboxAccount("postgres");
  }

  // The job's mailbox connection logs in as `role`.
  void UseMailboxAccount(const std::string& role) {
    std::string url = pg_->Url(mailbox_db_);
    url.replace(url.find("postgres@"), 9, role + "@");
    marks_ = std::make_unique<PgMailboxMarks>(url, "cminmsgs", MailboxColumns{});
  }

  // A mailbox row `id`, unmarked unless `processed` is given.
  void Mailbox(std::int64_t id, const std::string& processed = "NULL",
               const std::string& status = "'VALID'") {
    pg_->Psql(mailbox_db_,
              "INSERT INTO cminmsgs (cminmsgs_id, cminmsgs_clob_msg, "
              "cminmsgs_date_received, cminmsgs_date_processed, cminmsgs_status) "
              "VALUES (" +
                  std::to_string(id) + ", '<MSG/>', now(), " + processed + ", " + status + ")");
  }

  // A proc_state row `id` in `state`, decided `age_hours` before the clock.
  MicrosSinceEpoch Outcome(std::int64_t id, const std::string& state, int age_hours = 1) {
    const MicrosSinceEpoch at = clock_.NowMicros() - age_hours * kHour;
    pg_->Psql(own_db_,
              "INSERT INTO proc_state (msg_id, state, updated_at, backfill_next_at) "
              "VALUES (" +
                  std::to_string(id) + ", '" + state + "', '" + PgTimestamp(at) + "', '" +
                  PgTimestamp(at) + "')");
    return at;
  }

  // The mailbox row's processed column (micros, as written) and status.
  struct Mark {
    std::optional<MicrosSinceEpoch> processed;
    std::string status;
  };
  Mark MailboxMark(std::int64_t id) {
    pqxx::connection c(pg_->Url(mailbox_db_));
    pqxx::nontransaction nt(c);
    nt.exec("SET TIME ZONE 'UTC'");
    const pqxx::row r = nt.exec1(
        "SELECT (EXTRACT(EPOCH FROM cminmsgs_date_processed) * 1000000)::bigint, "
        "coalesce(cminmsgs_status, '') FROM cminmsgs WHERE cminmsgs_id = " +
        std::to_string(id));
    Mark m;
    if (!r[0].is_null()) m.processed = r[0].as<std::int64_t>();
    m.status = r[1].as<std::string>();
    return m;
  }

  // One column of proc_state row `id`, as text ("" for NULL).
  std::string Own(std::int64_t id, const std::string& column) {
    pqxx::connection c(url_);
    pqxx::nontransaction nt(c);
    const pqxx::row r = nt.exec1("SELECT " + column +
                                 "::text FROM proc_state WHERE msg_id = " + std::to_string(id));
    return r[0].is_null() ? "" : r[0].as<std::string>();
  }

  ProcessedMark Job(int batch = 1000) {
    ProcessedMarkOptions o;
    o.log_uuid = "log-M";
    o.batch = batch;
    o.overdue = Millis(30LL * 24 * 3'600'000);
    return ProcessedMark(session_.get(), marks_.get(), &clock_, o);
  }

  // `msgx backfill --reconcile ids…` against the msgx database.
  CommandOutput Reconcile(const std::vector<std::string>& ids) {
    SpawnOptions o;
    o.argv = {MSGX_BINARY, "backfill", "--reconcile"};
    o.argv.insert(o.argv.end(), ids.begin(), ids.end());
    o.argv.insert(o.argv.end(), {"--by", "ops-test"});
    o.extra_env = {"MSGX_POSTGRES_URL=" + url_, "MSGX_LOG_LEVEL=warn"};
    auto r = RunCommand(o, "", std::chrono::seconds(60));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : CommandOutput{};
  }

  static int n_;
  std::string own_db_;
  std::string mailbox_db_;
  std::string url_;
  std::unique_ptr<PgSession> session_;
  std::unique_ptr<PgLeadership> lead_;
  std::unique_ptr<PgMailboxMarks> marks_;
  std::int64_t epoch_ = 0;
  ManualClock clock_{SystemClock::Default()->NowMicros()};
};
int MarkJobTest::n_ = 0;

TEST_F(MarkJobTest, OnlyTerminalRowsAreMarkedAndOnlyFromNull) {
  for (std::int64_t id = 1; id <= 6; ++id) Mailbox(id);
  Mailbox(7, "'2020-01-02 03:04:05'", "'LEGACY'");  // marked before msgx
  const MicrosSinceEpoch t1 = Outcome(1, "SUCCEEDED", 3);
  const MicrosSinceEpoch t2 = Outcome(2, "SKIPPED", 2);
  const MicrosSinceEpoch t3 = Outcome(3, "DEAD", 1);
  Outcome(4, "PENDING");
  Outcome(5, "FAILED");
  // 6: captured, no outcome yet.
  Outcome(7, "SUCCEEDED");
  ProcessedMark job = Job();
  auto before = job.Count(100);
  ASSERT_TRUE(before.ok()) << before.status().ToString();
  EXPECT_EQ(before->backlog, 4);
  auto r = job.Step(epoch_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->taken, 4);
  EXPECT_EQ(r->marked, 3);
  EXPECT_EQ(r->elsewhere, 1);
  EXPECT_EQ(r->abandoned, 0);
  // The terminal rows carry their decision time and PROCESSED.
  EXPECT_EQ(MailboxMark(1).processed, t1);
  EXPECT_EQ(MailboxMark(2).processed, t2);
  EXPECT_EQ(MailboxMark(3).processed, t3);
  for (std::int64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(MailboxMark(id).status, "PROCESSED") << id;
    EXPECT_EQ(Own(id, "mark_state"), "MARKED") << id;
    EXPECT_EQ(Own(id, "mark_reason"), "") << id;
    EXPECT_EQ(Own(id, "(backfill_at = '" + PgTimestamp(clock_.NowMicros()) + "')"), "true") << id;
  }
  // Not terminal, or no outcome: untouched in both databases.
  for (std::int64_t id = 4; id <= 6; ++id) {
    EXPECT_FALSE(MailboxMark(id).processed) << id;
    EXPECT_EQ(MailboxMark(id).status, "VALID") << id;
  }
  EXPECT_EQ(Own(4, "mark_state"), "");
  EXPECT_EQ(Own(5, "mark_state"), "");
  // Marked before msgx: left exactly as it was.
  const Mark seven = MailboxMark(7);
  EXPECT_EQ(seven.status, "LEGACY");
  EXPECT_EQ(seven.processed, 1577934245LL * 1'000'000);
  EXPECT_EQ(Own(7, "mark_state"), "MARKED_ELSEWHERE");
  EXPECT_NE(Own(7, "mark_reason").find("'LEGACY'"), std::string::npos) << Own(7, "mark_reason");
  // Nothing is left to do; a second run writes nothing.
  auto again = job.Step(epoch_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->taken, 0);
  EXPECT_EQ(job.Count(100)->backlog, 0);
  // A later outcome for a marked row (a replayed DEAD message) leaves the
  // mark as it is: the row is not to do again.
  pg_->Psql(own_db_, "UPDATE proc_state SET state = 'SUCCEEDED' WHERE msg_id = 3");
  EXPECT_EQ(job.Step(epoch_)->taken, 0);
}

// mailbox.time-zone: a TIMESTAMP (without time zone) processed column
// receives the zone's wall-clock reading, across a DST change, and a re-run
// reads its own mark back as the instant written.
TEST_F(MarkJobTest, TheMarkWritesTheMailboxTimeZonesLocalTime) {
  Mailbox(1);
  Mailbox(2);
  PgMailboxMarks berlin(pg_->Url(mailbox_db_), "cminmsgs", MailboxColumns{}, "Europe/Berlin");
  const MicrosSinceEpoch winter = 1'774'744'200'000'000;  // 2026-03-29T00:30:00Z (CET)
  const MicrosSinceEpoch summer = 1'774'747'800'000'007;  // 2026-03-29T01:30:00.000007Z (CEST)
  std::vector<MailboxMarkSeen> seen;
  Status s =
      berlin.MarkFromNull(std::vector<MarkRequest>{{1, winter}, {2, summer}}, "PROCESSED", &seen);
  ASSERT_TRUE(s.ok()) << s.ToString();
  {
    pqxx::connection c(pg_->Url(mailbox_db_));
    pqxx::nontransaction nt(c);
    const pqxx::result r =
        nt.exec("SELECT cminmsgs_date_processed::text FROM cminmsgs ORDER BY cminmsgs_id");
    ASSERT_EQ(r.size(), 2u);
    EXPECT_EQ(r[0][0].as<std::string>(), "2026-03-29 01:30:00");
    EXPECT_EQ(r[1][0].as<std::string>(), "2026-03-29 03:30:00.000007");
  }
  seen.clear();
  ASSERT_TRUE(berlin.MarkFromNull(std::vector<MarkRequest>{{1, 0}, {2, 0}}, "AGAIN", &seen).ok());
  std::map<std::int64_t, MailboxMarkSeen> by_id;
  for (const auto& x : seen) by_id[x.id] = x;
  EXPECT_EQ(by_id[1].kind, MailboxMarkSeen::Kind::kFound);
  EXPECT_EQ(by_id[1].processed, std::optional<MicrosSinceEpoch>(winter));
  EXPECT_EQ(by_id[2].processed, std::optional<MicrosSinceEpoch>(summer));
}

TEST_F(MarkJobTest, WorksInBoundedBatchesOldestIntentFirst) {
  for (std::int64_t id = 1; id <= 5; ++id) {
    Mailbox(id);
    Outcome(id, "SUCCEEDED", static_cast<int>(10 - id));  // 1 is the oldest
  }
  ProcessedMark job = Job(2);
  EXPECT_EQ(job.Step(epoch_)->marked, 2);
  EXPECT_EQ(Own(1, "mark_state"), "MARKED");
  EXPECT_EQ(Own(2, "mark_state"), "MARKED");
  EXPECT_EQ(Own(3, "mark_state"), "");
  EXPECT_EQ(job.Step(epoch_)->marked, 2);
  auto last = job.Step(epoch_);
  EXPECT_EQ(last->taken, 1);
  EXPECT_EQ(last->marked, 1);
}

TEST_F(MarkJobTest, AVanishedRowIsAbandonedAtOnceAndReconciledThroughTheCli) {
  Mailbox(1);
  Outcome(1, "SUCCEEDED");
  Outcome(2, "DEAD");       // no longer in the mailbox
  Outcome(3, "SUCCEEDED");  // neither
  ProcessedMark job = Job();
  auto r = job.Step(epoch_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->marked, 1);
  EXPECT_EQ(r->abandoned, 2);
  for (std::int64_t id : {2, 3}) {
    EXPECT_EQ(Own(id, "mark_state"), "ABANDONED");
    EXPECT_NE(Own(id, "mark_reason").find("no longer in the mailbox"), std::string::npos);
    EXPECT_NE(Own(id, "backfill_abandoned_at"), "");
    EXPECT_EQ(Own(id, "backfill_abandoned_reason"), Own(id, "mark_reason"));
  }
  EXPECT_EQ(job.Count(100)->abandoned, 2);
  EXPECT_EQ(job.Step(epoch_)->taken, 0);  // settled: not tried again

  // Reconciled by the CLI: the row leaves the open list, its abandon
  // record stays.
  CommandOutput one = Reconcile({"2"});
  EXPECT_EQ(one.status.code, 0) << one.out << one.err;
  EXPECT_NE(one.out.find("reconciled 1"), std::string::npos) << one.out;
  EXPECT_EQ(Own(2, "mark_state"), "RECONCILED");
  EXPECT_NE(Own(2, "mark_reason").find("ops-test"), std::string::npos) << Own(2, "mark_reason");
  EXPECT_NE(Own(2, "backfill_abandoned_reason"), "");
  EXPECT_EQ(job.Count(100)->abandoned, 1);
  // A marked row is not on the list: refused by name, exit 1; the others
  // are still reconciled, and a repeat is harmless.
  CommandOutput mixed = Reconcile({"1", "2", "3"});
  EXPECT_EQ(mixed.status.code, 1) << mixed.out << mixed.err;
  EXPECT_NE(mixed.err.find("msg_id 1 is not on the abandon list (mark_state MARKED)"),
            std::string::npos)
      << mixed.err;
  EXPECT_EQ(Own(1, "mark_state"), "MARKED");
  EXPECT_EQ(Own(3, "mark_state"), "RECONCILED");
  EXPECT_EQ(job.Count(100)->abandoned, 0);
}

TEST_F(MarkJobTest, AnAccountWithoutUpdateStallsChargingNothingUntilTheGrant) {
  const std::string role = "marker_" + std::to_string(n_);
  pg_->Psql(mailbox_db_, "CREATE ROLE " + role + " LOGIN");
  // docs/operations.md#the-mailbox-account, before the UPDATE grant.
  pg_->Psql(mailbox_db_, "GRANT SELECT ON cminmsgs TO " + role);
  UseMailboxAccount(role);
  Mailbox(1);
  Mailbox(2);
  const MicrosSinceEpoch t1 = Outcome(1, "SUCCEEDED");
  Outcome(2, "SKIPPED");
  ProcessedMark job = Job();
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = job.Step(epoch_);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().error_class(), ErrorClass::kInfra);  // an outage: the stage stalls
    EXPECT_NE(r.status().message().find("permission denied"), std::string::npos)
        << r.status().message();
  }
  // Nothing written, nothing charged.
  EXPECT_FALSE(MailboxMark(1).processed);
  EXPECT_EQ(MailboxMark(1).status, "VALID");
  for (std::int64_t id : {1, 2}) {
    EXPECT_EQ(Own(id, "mark_state"), "") << id;
    EXPECT_EQ(Own(id, "backfill_attempts"), "0") << id;
    EXPECT_EQ(Own(id, "backfill_error"), "") << id;
    EXPECT_EQ(Own(id, "backfill_abandoned_at"), "") << id;
  }
  // Still unmarked a month later: overdue.
  clock_.Advance(std::chrono::hours(31 * 24));
  auto counts = job.Count(100);
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(counts->backlog, 2);
  EXPECT_EQ(counts->overdue, 2);
  EXPECT_EQ(counts->oldest_overdue, 1);
  // The documented grant: the next attempt marks both.
  pg_->Psql(mailbox_db_,
            "GRANT UPDATE (cminmsgs_date_processed, cminmsgs_status) ON cminmsgs TO " + role);
  auto r = job.Step(epoch_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->marked, 2);
  EXPECT_EQ(MailboxMark(1).processed, t1);
  EXPECT_EQ(MailboxMark(1).status, "PROCESSED");
  EXPECT_EQ(Own(2, "mark_state"), "MARKED");
  EXPECT_EQ(job.Count(100)->overdue, 0);
}

TEST_F(MarkJobTest, ADeathBetweenTheMailboxAndTheSettleSettlesMarkedOnTheNextRun) {
  for (std::int64_t id = 1; id <= 3; ++id) Mailbox(id);
  Outcome(1, "SUCCEEDED");
  Outcome(2, "DEAD");
  Outcome(3, "SKIPPED");
  {
    ProcessedMark dying = Job();
    auto b = dying.TakeAndMark(epoch_);  // and then the process dies
    ASSERT_TRUE(b.ok()) << b.status().ToString();
    EXPECT_EQ(b->rows.size(), 3u);
  }
  for (std::int64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(MailboxMark(id).status, "PROCESSED");
    EXPECT_EQ(Own(id, "mark_state"), "");
  }
  clock_.Advance(std::chrono::minutes(5));  // the restart
  ProcessedMark job = Job();
  auto r = job.Step(epoch_);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->marked, 3);
  EXPECT_EQ(r->elsewhere, 0);
  for (std::int64_t id = 1; id <= 3; ++id) {
    EXPECT_EQ(Own(id, "mark_state"), "MARKED") << id;
    EXPECT_NE(Own(id, "mark_reason").find("own mark"), std::string::npos) << id;
  }
}

// A settle only changes rows still to do: a batch that settles late (a
// second runner, a paused process) does not reopen a row that was
// abandoned and reconciled meanwhile.
TEST_F(MarkJobTest, ALateSettleChangesNoSettledRow) {
  Outcome(1, "SUCCEEDED");  // not in the mailbox
  ProcessedMark late = Job();
  auto batch = late.TakeAndMark(epoch_);
  ASSERT_TRUE(batch.ok()) << batch.status().ToString();
  ProcessedMark job = Job();
  EXPECT_EQ(job.Step(epoch_)->abandoned, 1);
  auto rec = ReconcileAbandoned(session_.get(), {1}, "ops-test", clock_.NowMicros());
  ASSERT_TRUE(rec.ok()) << rec.status().ToString();
  EXPECT_EQ(rec->reconciled, 1);
  auto r = late.Settle(epoch_, *batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(Own(1, "mark_state"), "RECONCILED");
  EXPECT_EQ(job.Count(100)->abandoned, 0);
}

TEST_F(MarkJobTest, AStaleLeaderMarksNothing) {
  Mailbox(1);
  Outcome(1, "SUCCEEDED");
  ProcessedMark job = Job();
  pg_->Psql(own_db_, "UPDATE pipeline SET leader_epoch = leader_epoch + 1");
  auto r = job.Step(epoch_);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfra);
  EXPECT_NE(r.status().message().find("stale epoch"), std::string::npos) << r.status().message();
  EXPECT_EQ(job.Step(0).status().error_class(), ErrorClass::kInfra);  // not leading at all
  EXPECT_FALSE(MailboxMark(1).processed);
  EXPECT_EQ(Own(1, "mark_state"), "");
}

}  // namespace
}  // namespace msgx
