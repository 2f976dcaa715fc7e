// Two `msgx run` processes on one database (docs/commit-protocol.md#single-writer):
// the second waits and takes over, a stale leader's writes do not land, and
// a process that does not lead still captures and folds.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "base/subprocess.h"
#include "tests/support/pipeline_fixture.h"

namespace msgx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::PipelineTest;
using testing::ReadyzOnceItSays;

// Two processes on the same state directory and databases: exactly one
// writes; kill it and the other takes over within seconds.
TEST_F(PipelineTest, SecondProcessWaitsAndTakesOver) {
  std::int64_t rows = LoadMailbox(0);
  const pid_t first = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  const pid_t second = StartMsgx();
  std::this_thread::sleep_for(seconds(2));
  EXPECT_FALSE(PollExit(second).has_value()) << "the second process must wait, not exit";
  const auto epoch = OwnCount("SELECT leader_epoch FROM pipeline");
  ASSERT_TRUE(StopProcess(first, SIGKILL, seconds(5)).ok());
  AddGenerated(500, 740'000);
  rows = MailboxRows();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(WaitSettled(rows, seconds(60))) << Log();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, seconds(30));
  EXPECT_GT(OwnCount("SELECT leader_epoch FROM pipeline"), epoch);
  StopMsgx(second);
  ExpectConsistent(rows);
}

// A stale leader (issue 12; docs/operations.md#who-writes). A copy of a
// stopped leader's state.dir makes a second process B on the same log. A
// leads again and dispatches while rows arrive; then its lock is revoked
// (its lock session terminated) and its lock check blinded (failpoint
// leadership.check), as if it had been paused past the takeover: it goes on
// with its old epoch. B takes over with a newer one. Nothing A writes
// afterwards lands: an audit trigger on every table of msgx's database
// records the application_name of each row written, and after B's epoch
// grant none is A's; Redis's mirror carries B's epoch; A steps down at its
// first refused write. The trigger is per row, not per statement: a fenced
// statement of A's that runs after the grant and writes nothing (a
// delivered range's one-statement insert, docs/dispatch.md#delivered-ranges)
// still fires a statement trigger, and lands nothing. (Kafka fences A's
// producer itself, by the shared transactional id; A's dispatchers load
// nothing once their epoch is stale.)
TEST_F(PipelineTest, AStaleLeadersWritesDoNotLand) {
  const std::int64_t first_rows = LoadMailbox(200);
  const std::string url_a = own_url_ + "?application_name=msgx-A";
  const std::string url_b = own_url_ + "?application_name=msgx-B";
  pid_t a = StartMsgx({"MSGX_POSTGRES_URL=" + url_a});
  ASSERT_TRUE(WaitSettled(first_rows, seconds(120))) << Log();
  StopMsgx(a);
  const std::string dir_b = state_dir_ + "-b";
  std::filesystem::copy(state_dir_, dir_b, std::filesystem::copy_options::recursive);
  own_pg_->Psql(own_db_, R"(
    CREATE TABLE audit (seq BIGSERIAL PRIMARY KEY, app TEXT NOT NULL, tbl TEXT NOT NULL,
                        op TEXT NOT NULL);
    CREATE FUNCTION audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        INSERT INTO audit (app, tbl, op)
          VALUES (current_setting('application_name'), TG_TABLE_NAME, TG_OP);
        RETURN NULL;
      END $$;
    DO $$ DECLARE t TEXT; BEGIN
      FOR t IN SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'audit'
      LOOP
        EXECUTE format('CREATE TRIGGER audit_write AFTER INSERT OR UPDATE OR DELETE ON %I '
                       'FOR EACH ROW EXECUTE FUNCTION audit_write()', t);
      END LOOP;
    END $$;)");

  a = StartMsgx({"MSGX_POSTGRES_URL=" + url_a, "MSGX_TEST_FAILPOINTS=leadership.check::error"});
  const std::string lock_app = "msgx run pid=" + std::to_string(a) + " ";
  // A leads (its first run's session may take a moment to go) before B starts.
  const std::string a_holds =
      "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity s ON s.pid = l.pid WHERE "
      "l.locktype = 'advisory' AND l.granted AND s.application_name LIKE '" +
      lock_app + "%'";
  bool a_leads = false;
  for (int i = 0; i < 300 && !a_leads; ++i) {
    a_leads = OwnCount(a_holds) > 0;
    if (!a_leads) std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_TRUE(a_leads) << Log();
  const std::string log_a = msgx_log_;
  msgx_log_ = dir_b + "/msgx-b.log";
  const pid_t b = StartMsgx({"MSGX_POSTGRES_URL=" + url_b, "MSGX_STATE_DIR=" + dir_b});
  std::atomic<bool> flowing{true};
  std::thread traffic([&] {
    for (int i = 0; flowing; ++i) {
      AddGenerated(20, 950'000 + 20 * i);
      std::this_thread::sleep_for(milliseconds(200));
    }
  });
  // A dispatches (its events are being marked SENT), B waits for the lock.
  const std::int64_t sent_before =
      OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'");
  for (int i = 0; i < 200; ++i) {
    if (OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'") > sent_before + 20)
      break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  const std::int64_t epoch_a = OwnCount("SELECT leader_epoch FROM pipeline");
  own_pg_->Psql("postgres",
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name "
                "LIKE '" +
                    lock_app + "%'");
  // B takes over; A, blind to its lost lock, meets the fence and steps down.
  std::int64_t epoch_b = epoch_a;
  for (int i = 0; i < 300 && epoch_b == epoch_a; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    epoch_b = OwnCount("SELECT leader_epoch FROM pipeline");
  }
  ASSERT_GT(epoch_b, epoch_a);
  bool stepped_down = false;
  for (int i = 0; i < 300 && !stepped_down; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
    auto log = ReadFileToString(log_a);
    stepped_down = log.ok() && log->find("stepping down from epoch " + std::to_string(epoch_a)) !=
                                   std::string::npos;
  }
  std::this_thread::sleep_for(seconds(2));  // A, now a standby, keeps running
  flowing = false;
  traffic.join();
  const std::int64_t rows = MailboxRows();
  const bool settled = WaitSettled(rows, seconds(120));
  EXPECT_FALSE(PollExit(a).has_value()) << "A must go on as a standby";
  StopMsgx(a);
  StopMsgx(b);
  EXPECT_TRUE(settled) << Log();
  EXPECT_TRUE(stepped_down) << "A never stepped down; see " << log_a;

  // B's grant is its lock session's UPDATE of the epoch; after it, no write
  // of A's (its stages' sessions, or its lock session) landed. Not B's
  // first write: its INSERT … ON CONFLICT DO NOTHING comes before, and then
  // B waits (SELECT … FOR UPDATE) for A's fenced transactions that hold the
  // pipeline row FOR SHARE; those commit with A's epoch still current.
  const std::string b_lock = "msgx run pid=" + std::to_string(b) + " %";
  const std::int64_t grant = OwnCount(
      "SELECT min(seq) FROM audit WHERE tbl = 'pipeline' AND op = 'UPDATE' AND app LIKE '" +
      b_lock + "'");
  EXPECT_GT(OwnCount("SELECT count(*) FROM audit WHERE app = 'msgx-A' AND seq < " +
                     std::to_string(grant)),
            0)
      << "A wrote nothing before the takeover: the test proves nothing";
  EXPECT_EQ(OwnCount("SELECT count(*) FROM audit WHERE seq > " + std::to_string(grant) +
                     " AND (app = 'msgx-A' OR app LIKE '" + lock_app + "%')"),
            0)
      << own_pg_->Psql(own_db_, "SELECT app, tbl, count(*) FROM audit WHERE seq > " +
                                    std::to_string(grant) + " GROUP BY 1, 2");
  EXPECT_GT(OwnCount("SELECT count(*) FROM audit WHERE app = 'msgx-B'"), 0);
  EXPECT_EQ(redis_->Cli({"HGET", "msgx:mirror", "epoch"}), std::to_string(epoch_b) + "\n");
  msgx_log_ = log_a;
  if (settled) ExpectConsistent(rows);
}

// A process that holds the state.dir lock but cannot lead (its PostgreSQL
// unreachable) still captures and folds (docs/operations.md#standby); with
// its state store lost it cannot tell a rebuild from a first start, so the
// fold waits for PostgreSQL's batch digests and says so. Once PostgreSQL
// answers, everything is applied and the rebuild is checked by digest.
TEST_F(PipelineTest, AProcessThatDoesNotLeadStillCapturesAndFolds) {
  const std::int64_t corpus = LoadMailbox(0);
  const pid_t leader = StartMsgx();
  ASSERT_TRUE(WaitSettled(corpus, seconds(120))) << Log();
  StopMsgx(leader);
  const std::int64_t folded_before = FoldedOffset();
  ASSERT_GE(folded_before, corpus - 1);

  auto closed = FreeLoopbackPort();
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(closed.ok() && port.ok());
  // Its stop has nothing to drain: with PostgreSQL unreachable, the applier
  // and the dispatchers would only hold it for the whole default bound
  // (docs/operations.md#stopping).
  const std::vector<std::string> unreachable = {
      "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port),
      "MSGX_POSTGRES_URL=postgresql://127.0.0.1:" + std::to_string(*closed) + "/nowhere",
      "MSGX_SHUTDOWN_DRAIN_TIMEOUT=1s"};
  pid_t standby = StartMsgx(unreachable);
  AddGenerated(300, 750'000);
  const std::int64_t rows = MailboxRows();
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (FoldedOffset() < folded_before + 300 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(200));
  }
  EXPECT_EQ(FoldedOffset(), folded_before + 300) << Log();
  const auto [status, body] = ReadyzOnceItSays(*port, "not leading", 50);
  EXPECT_EQ(status, 503);
  StopMsgx(standby);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state"), corpus) << "nothing reached PostgreSQL";

  std::filesystem::remove_all(state_dir_ + "/state");
  standby = StartMsgx(unreachable);
  const auto [wait_status, wait_body] = ReadyzOnceItSays(*port, "nothing folded yet", 100);
  EXPECT_EQ(wait_status, 503);
  EXPECT_NE(wait_body.find("fold"), std::string::npos) << wait_body;
  EXPECT_NE(wait_body.find("nothing folded yet"), std::string::npos) << wait_body;
  EXPECT_EQ(FoldedOffset(), -1);
  StopMsgx(standby);

  const pid_t pid = StartMsgx({"MSGX_LOG_LEVEL=info"});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
  EXPECT_NE(Log().find("batch digests match"), std::string::npos) << Log();
}

}  // namespace
}  // namespace msgx
