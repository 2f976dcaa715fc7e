// The jobs inside a running `msgx run` (docs/jobs.md): sent-event
// compaction, the proc_state archive and replays from it, the processed
// mark after a crash, and the daily sweep.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <pqxx/pqxx>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/subprocess.h"
#include "state/log_record.h"
#include "state/log_store.h"
#include "tests/support/fixtures.h"
#include "tests/support/pipeline_fixture.h"

namespace msgx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::GetSoon;
using testing::MetricSample;
using testing::PipelineTest;

// The event-retention job in the running service (docs/jobs.md): with a
// retention of 2 s every SENT event goes soon after it was sent but those
// of each target's newest delivered range, the job's figures and metrics
// say so, and what stays is only those and what is not SENT.
// Beside it the processed mark (a run every second here) marks every
// mailbox row, all of them terminal, and settles each one MARKED, and the
// archive (proc-state.archive-after 2 s) then moves every settled row to
// proc_state_hst, leaving ARCHIVED shadows that keep their mark_state; and
// `msgx refold --verify` still passes with every job done.
TEST_F(PipelineTest, SentEventsAreCompactedWhileTheServiceRuns) {
  std::int64_t rows = LoadMailbox(200);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const pid_t pid = StartMsgx(
      {"MSGX_PIPELINE_EVENT_RETENTION=2s", "MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s",
       "MSGX_PROC_STATE_ARCHIVE_AFTER=2s", "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port)});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  // More changes after that backlog: KAFKA:msg gets newer delivered ranges,
  // so the backlog's range is no longer its newest.
  AddGenerated(20, 600'000);
  rows += 20;
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  // What stays: the newest delivered range of each target, which holds its
  // delivered position (docs/jobs.md#event-retention).
  const std::string kept =
      "SELECT coalesce(sum(events), 0) FROM outbox_delivery r WHERE r.last_event_id = "
      "(SELECT max(m.last_event_id) FROM outbox_delivery m WHERE m.target = r.target)";
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'") > OwnCount(kept) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(250));
  }
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), OwnCount(kept));
  EXPECT_LE(OwnCount("SELECT count(*) FROM outbox_delivery"), 3);
  // The job deleted them (events were made: the corpus and 200 changes).
  const auto deleted = MetricSample(*port, "msgx_job_rows_total{job_name=\"event-retention\"}");
  ASSERT_TRUE(deleted.has_value());
  EXPECT_GE(*deleted, 200.0);
  auto status = GetSoon(*port, "/status", seconds(5));
  ASSERT_TRUE(status);
  EXPECT_NE(status->body.find("\"job event-retention\""), std::string::npos) << status->body;
  // The processed mark: every mailbox row is marked, from NULL, and settled.
  auto unmarked = [&] {
    pqxx::connection c(pg_->Url("aodb"));
    pqxx::nontransaction nt(c);
    return nt.exec1("SELECT count(*) FROM cminmsgs WHERE cminmsgs_date_processed IS NULL")[0]
        .as<std::int64_t>();
  };
  const auto mark_deadline = std::chrono::steady_clock::now() + seconds(30);
  while ((unmarked() > 0 ||
          OwnCount("SELECT count(*) FROM proc_state WHERE mark_state IS NULL") > 0) &&
         std::chrono::steady_clock::now() < mark_deadline) {
    std::this_thread::sleep_for(milliseconds(250));
  }
  EXPECT_EQ(unmarked(), 0);
  {
    pqxx::connection c(pg_->Url("aodb"));
    pqxx::nontransaction nt(c);
    EXPECT_EQ(nt.exec1("SELECT count(*) FROM cminmsgs WHERE cminmsgs_status = 'PROCESSED'")[0]
                  .as<std::int64_t>(),
              rows);
  }
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state WHERE mark_state = 'MARKED'"), rows);
  const auto marked = MetricSample(*port, "msgx_job_rows_total{job_name=\"processed-mark\"}");
  ASSERT_TRUE(marked.has_value());
  EXPECT_EQ(*marked, static_cast<double>(rows));
  // The archive: every settled row moves, 2 s after its outcome.
  const auto archive_deadline = std::chrono::steady_clock::now() + seconds(30);
  while (OwnCount("SELECT count(*) FROM proc_state WHERE state = 'ARCHIVED'") < rows &&
         std::chrono::steady_clock::now() < archive_deadline) {
    std::this_thread::sleep_for(milliseconds(250));
  }
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state WHERE state = 'ARCHIVED'"), rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state_hst WHERE state IN ('SUCCEEDED', "
                     "'SKIPPED', 'DEAD') AND mark_state = 'MARKED'"),
            rows);
  const auto moved = MetricSample(*port, "msgx_job_rows_total{job_name=\"proc-state-archive\"}");
  ASSERT_TRUE(moved.has_value());
  EXPECT_EQ(*moved, static_cast<double>(rows));
  auto archive_status = GetSoon(*port, "/status", seconds(5));
  ASSERT_TRUE(archive_status);
  EXPECT_NE(archive_status->body.find("\"job proc-state-archive\""), std::string::npos)
      << archive_status->body;
  StopMsgx(pid);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state"), rows);
  EXPECT_EQ(Log().find("ALARM"), std::string::npos) << Log();
  // With every job done, the log still reproduces the state exactly.
  testing::ExpectRefoldVerifies(Env(), std::chrono::minutes(2));
}

// The archive killed inside its batch (failpoint archive.moved: the move
// statement ran, its transaction did not commit) moves nothing: every row
// is still live, none in proc_state_hst. The restarted service archives
// them all, each either live or an ARCHIVED shadow with its history row,
// never both, never neither. Then a replay of an archived DEAD message
// (docs/jobs.md#proc-state-archive): the replay's later offset replaces the
// shadow, the mailbox row is not marked again, and once old enough the new
// outcome is archived again over its history row.
TEST_F(PipelineTest, AnArchiveKilledMidBatchMovesNothingAndAnArchivedDeadMessageReplays) {
  LoadMailbox(50);
  const std::string dead_id = InsertUnsupportedRow();
  ASSERT_FALSE(dead_id.empty());
  const std::int64_t rows = MailboxRows();
  const std::vector<std::string> jobs = {"MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s",
                                         "MSGX_PROC_STATE_ARCHIVE_AFTER=1s"};
  std::vector<std::string> dying_env = jobs;
  dying_env.push_back("MSGX_TEST_FAILPOINTS=archive.moved::kill");
  const pid_t dying = StartMsgx(dying_env);
  auto exit = WaitForExit(dying, seconds(120));
  ASSERT_TRUE(exit.ok()) << "archive.moved never fired\n" << Log();
  EXPECT_EQ(exit->code, -SIGKILL) << Log();
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state WHERE state = 'ARCHIVED'"), 0);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state_hst"), 0);
  EXPECT_GT(OwnCount("SELECT count(*) FROM proc_state WHERE mark_state = 'MARKED'"), 0);

  const pid_t pid = StartMsgx(jobs);
  auto archived = [&] {
    return OwnCount("SELECT count(*) FROM proc_state WHERE state = 'ARCHIVED'");
  };
  ASSERT_TRUE(WaitFor([&] { return archived() == rows; })) << archived() << "\n" << Log();
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state p JOIN proc_state_hst h USING (msg_id) "
                     "WHERE p.state = 'ARCHIVED' AND h.log_offset = p.log_offset "
                     "AND h.identity_key IS NOT DISTINCT FROM p.identity_key"),
            rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state_hst"), rows);
  const std::string dead_row = " FROM proc_state_hst WHERE msg_id = " + dead_id;
  ASSERT_EQ(OwnCount("SELECT count(*)" + dead_row + " AND state = 'DEAD'"), 1);
  const std::int64_t first_offset = OwnCount("SELECT log_offset" + dead_row);
  auto mailbox_mark = [&] {
    return pg_->Psql("aodb",
                     "SELECT cminmsgs_date_processed FROM cminmsgs WHERE cminmsgs_id = " + dead_id);
  };
  const std::string marked_at = mailbox_mark();

  ASSERT_TRUE(QueueReplay(dead_id));
  // Decided again at the command's later offset, and archived again over its
  // history row (the test cannot rely on seeing the live row in between).
  ASSERT_TRUE(WaitFor([&] {
    return OwnCount("SELECT count(*)" + dead_row + " AND log_offset > " +
                    std::to_string(first_offset) + " AND prev_error LIKE 'UNSUPPORTED:%'") == 1;
  })) << Log();
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state WHERE msg_id = " + dead_id +
                     " AND state = 'ARCHIVED' AND mark_state = 'MARKED' AND log_offset = "
                     "(SELECT log_offset" +
                     dead_row + ")"),
            1);
  EXPECT_EQ(mailbox_mark(), marked_at);  // not marked again
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state_hst"), rows);
  StopMsgx(pid);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state"), rows);
  EXPECT_EQ(Log().find("ALARM"), std::string::npos) << Log();
}

// With a short archive-after every outcome ends as an ARCHIVED shadow, and
// the consistency check compares each through its proc_state_hst row (no
// shadow counts as a mismatch). Then, with the archive far off, `msgx
// replay --msg` of an archived DEAD message brings its row back from
// ARCHIVED: a live DEAD row at the replay's later offset, its prev_error the
// archived outcome's, its settled mark kept; the others stay archived and
// the check still passes (docs/jobs.md#proc-state-archive).
TEST_F(PipelineTest, ArchivedOutcomesAreConsistentAndAReplayBringsOneBack) {
  LoadMailbox(20);
  const std::string dead_id = InsertUnsupportedRow();
  ASSERT_FALSE(dead_id.empty());
  const std::int64_t rows = MailboxRows();
  auto archived = [&] {
    return OwnCount("SELECT count(*) FROM proc_state WHERE state = 'ARCHIVED'");
  };
  pid_t pid =
      StartMsgx({"MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s", "MSGX_PROC_STATE_ARCHIVE_AFTER=1s"});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  ASSERT_TRUE(WaitFor([&] { return archived() == rows; })) << archived() << "\n" << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
  const std::string dead = " FROM proc_state_hst WHERE msg_id = " + dead_id;
  ASSERT_EQ(OwnCount("SELECT count(*)" + dead + " AND state = 'DEAD'"), 1);
  const std::int64_t archived_offset = OwnCount("SELECT log_offset" + dead);

  pid = StartMsgx({"MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s", "MSGX_PROC_STATE_ARCHIVE_AFTER=1d"});
  ASSERT_TRUE(QueueReplay(dead_id));
  const std::string live = "SELECT count(*) FROM proc_state WHERE msg_id = " + dead_id +
                           " AND state = 'DEAD' AND error_class = 'UNSUPPORTED' AND "
                           "prev_error LIKE 'UNSUPPORTED:%' AND mark_state = 'MARKED' AND "
                           "log_offset > " +
                           std::to_string(archived_offset);
  ASSERT_TRUE(WaitFor([&] { return OwnCount(live) == 1; })) << Log();
  ASSERT_TRUE(WaitSettled(rows, seconds(60))) << Log();
  StopMsgx(pid);
  EXPECT_EQ(OwnCount(live), 1);
  EXPECT_EQ(archived(), rows - 1);
  ExpectConsistent(rows);
  EXPECT_EQ(Log().find("ALARM"), std::string::npos) << Log();
}

// The processed mark dies between its mailbox write and its settle (the
// failpoint mark.after_mailbox exits the process): the restarted service
// writes nothing again (from NULL) and settles those rows MARKED, as its own
// marks, not MARKED_ELSEWHERE (docs/jobs.md#the-settle-rule).
TEST_F(PipelineTest, AMarkThatDiedBeforeItsSettleIsSettledMarkedOnRestart) {
  const std::int64_t rows = LoadMailbox(200);
  const pid_t dying = StartMsgx(
      {"MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s", "MSGX_TEST_FAILPOINTS=mark.after_mailbox::exit"});
  auto exit = WaitForExit(dying, seconds(120));
  ASSERT_TRUE(exit.ok()) << exit.status().ToString() << Log();
  EXPECT_EQ(exit->code, 86) << Log();
  auto marked_in_mailbox = [&] {
    pqxx::connection c(pg_->Url("aodb"));
    pqxx::nontransaction nt(c);
    return nt.exec1("SELECT count(*) FROM cminmsgs WHERE cminmsgs_status = 'PROCESSED'")[0]
        .as<std::int64_t>();
  };
  const std::int64_t died_with = marked_in_mailbox();
  EXPECT_GT(died_with, 0);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state WHERE mark_state IS NOT NULL"), 0);
  const pid_t pid = StartMsgx({"MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s"});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  const auto deadline = std::chrono::steady_clock::now() + seconds(30);
  while (OwnCount("SELECT count(*) FROM proc_state WHERE mark_state IS NULL") > 0 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(250));
  }
  StopMsgx(pid);
  EXPECT_EQ(marked_in_mailbox(), rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state WHERE mark_state = 'MARKED'"), rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state WHERE mark_reason LIKE '%own mark%'"),
            died_with);
}

// The daily sweep in the running service (docs/jobs.md#history-sweep): with
// history.sweep-at 00:00 the day's run is due at once, so the first process
// appends the day's HISTORY_SWEEP and IDENTITY_EXPIRY; a restart on the
// same day, and then a leader change (a second process on a copy of the
// stopped leader's state.dir, which takes the next epoch), append nothing
// more. Each command carries its day's id, so no day appears twice even if
// the test straddles midnight.
TEST_F(PipelineTest, TheDailySweepIsAppendedOncePerAirportDay) {
  const std::int64_t rows = LoadMailbox(0);
  for (int run = 0; run < 3; ++run) {
    if (run == 2) {  // the leader change: another state.dir, a copy
      const std::string copy = state_dir_ + "-b";
      std::filesystem::copy(state_dir_, copy, std::filesystem::copy_options::recursive);
      state_dir_ = copy;
    }
    const std::int64_t epoch = run == 0 ? 0 : OwnCount("SELECT leader_epoch FROM pipeline");
    const pid_t pid = StartMsgx({"MSGX_HISTORY_SWEEP_AT=00:00"});
    ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
    StopMsgx(pid);
    EXPECT_GT(OwnCount("SELECT leader_epoch FROM pipeline"), epoch);
  }
  auto log = LogStore::Open(state_dir_ + "/log", SystemClock::Default());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::vector<LogEntry> all;
  ASSERT_TRUE((*log)->Read(0, 1'000'000, &all).ok());
  std::map<std::int64_t, int> sweeps, expiries;  // command id -> count
  for (const auto& e : all) {
    auto r = ToLogRecordData(e.bytes);
    ASSERT_TRUE(r.ok());
    if (!r->command) continue;
    if (std::holds_alternative<HistorySweepArgs>(r->command->args))
      ++sweeps[r->command->command_id];
    if (std::holds_alternative<IdentityExpiryArgs>(r->command->args)) {
      ++expiries[r->command->command_id];
    }
  }
  log->reset();
  ASSERT_GE(sweeps.size(), 1u);
  EXPECT_LE(sweeps.size(), 2u);
  EXPECT_EQ(sweeps.size(), expiries.size());
  for (const auto& [id, n] : sweeps) EXPECT_EQ(n, 1) << "sweep " << id << " appended twice";
  for (const auto& [id, n] : expiries) EXPECT_EQ(n, 1) << "expiry " << id << " appended twice";
  ExpectConsistent(rows);
}

}  // namespace
}  // namespace msgx
