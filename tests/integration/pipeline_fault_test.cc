// The fault run (issue 12; docs/crash-safety.md#tests): `msgx run` through
// one fault after another while rows keep arriving, on a PostgreSQL and on a
// MariaDB mailbox; and a full state.dir at start-up.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/subprocess.h"
#include "tests/support/fixtures.h"
#include "tests/support/pipeline_fixture.h"

namespace msgx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::MetricSample;
using testing::PipelineTest;
using testing::ReadyzOnceItSays;

// Runs `argv`; true when it exited 0.
bool Succeeds(std::vector<std::string> argv) {
  SpawnOptions o;
  o.argv = std::move(argv);
  auto r = RunCommand(o, "", seconds(30));
  return r.ok() && r->status.ok();
}

// A tmpfs of `size` mounted at `path` (created) for as long as it lives,
// where this machine allows mounting one (Mounted() says).
class ScopedTmpfs {
 public:
  ScopedTmpfs(const std::string& path, const std::string& size) : path_(path) {
    std::filesystem::create_directories(path);
    mounted_ = Succeeds({"mount", "-t", "tmpfs", "-o", "size=" + size, "tmpfs", path});
  }
  ~ScopedTmpfs() {
    if (mounted_) (void)Succeeds({"umount", "-l", path_});
  }
  ScopedTmpfs(const ScopedTmpfs&) = delete;
  ScopedTmpfs& operator=(const ScopedTmpfs&) = delete;
  bool Mounted() const { return mounted_; }

 private:
  std::string path_;
  bool mounted_ = false;
};

// Fills the file system of `dir` with `file`, up to its last byte even while
// msgx writes to it: fallocate of all but 1 MiB it has left, then zeros
// appended until a write fails.
bool FillUp(const std::string& dir, const std::string& file) {
  const std::uintmax_t left = std::filesystem::space(dir).available;
  if (left > (2U << 20) &&
      !Succeeds({"fallocate", "-l", std::to_string(left - (1U << 20)), file})) {
    return false;
  }
  (void)Succeeds({"sh", "-c", "dd if=/dev/zero bs=4096 >>'" + file + "' 2>/dev/null"});
  return std::filesystem::space(dir).available < (1U << 20);
}

// MSGX_TEST_FAULT_SECONDS, how long each fault of the fault run holds:
// default 3 (the documented run uses 20).
int FaultSeconds() {
  const char* secs = std::getenv("MSGX_TEST_FAULT_SECONDS");
  return secs ? std::atoi(secs) : 3;
}

}  // namespace

// The whole `msgx run` through one fault after another while rows keep
// arriving (issue 12; docs/crash-safety.md#tests): Redis at maxmemory with
// noeviction, Redis MISCONF (a failed BGSAVE with save points set), the own
// database read-only, every connection of msgx terminated (its database and
// the mailbox's), and the broker down, each held FaultSeconds(). msgx never
// exits and meets each fault as a stall, never an ALARM; afterwards every
// outcome, Redis and Kafka are complete, per-flight order holds, and
// `refold --verify` passes. Where this machine may mount a tmpfs, state.dir
// is on one and the last fault fills it up to its last byte: the log and
// the state store stall at their free-space reserve
// (docs/operations.md#error-classes). PipelineMariaDbTest runs the same
// against a MariaDB mailbox.
void testing::PipelineTest::FaultRun() {
  ScopedTmpfs tmpfs(state_dir_ + "/fs", "512m");
  if (tmpfs.Mounted()) {
    state_dir_ += "/fs";
  } else {
    std::printf("cannot mount a tmpfs here: the full state.dir is left out\n");
  }
  const std::int64_t loaded = LoadMailbox(0);
  Consumers consumers;
  StartConsumers(&consumers, seconds(600));
  auto& consumed = consumers.consumed;
  const pid_t pid = StartMsgx();
  std::atomic<bool> flowing{true};
  std::thread traffic([&] {
    for (int i = 0; flowing; ++i) {
      AddGenerated(40, 900'000 + 40 * i);
      std::this_thread::sleep_for(milliseconds(250));
    }
  });
  const auto hold = seconds(FaultSeconds());
  auto fault = [&](const char* what, const std::function<void()>& begin,
                   const std::function<void()>& end) {
    begin();
    std::this_thread::sleep_for(hold);
    end();
    EXPECT_FALSE(PollExit(pid).has_value()) << "msgx exited during: " << what << "\n" << Log();
    std::this_thread::sleep_for(seconds(1));
  };
  auto terminate = [&](bool mailbox_too) {
    const std::string kill =
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '";
    const std::string not_psql = "' AND application_name <> 'psql' AND pid <> pg_backend_pid()";
    own_pg_->Psql("postgres", kill + own_db_ + not_psql);
    if (!mailbox_too) return;
    if (maria_mailbox_) {
      maria_->Sql("mysql", "KILL USER msgx");  // msgx's account, not the fixture's root
    } else {
      pg_->Psql("postgres", kill + "aodb" + not_psql);
    }
  };

  fault(
      "Redis at maxmemory",
      [&] {
        redis_->Cli({"CONFIG", "SET", "maxmemory-policy", "noeviction"});
        redis_->Cli({"CONFIG", "SET", "maxmemory", "1"});
      },
      [&] {
        redis_->Cli({"CONFIG", "SET", "maxmemory", "0"});
      });
  fault(
      "Redis MISCONF",
      [&] {
        // A BGSAVE that dies makes a Redis with save points refuse writes.
        redis_->Cli({"CONFIG", "SET", "rdb-key-save-delay", "1000000"});
        redis_->Cli({"CONFIG", "SET", "save", "3600 1"});
        redis_->Cli({"BGSAVE"});
        const std::string info = redis_->Cli({"INFO", "server"});
        const auto at = info.find("process_id:");
        ASSERT_NE(at, std::string::npos) << info;
        const std::string redis_pid = std::to_string(std::stoll(info.substr(at + 11)));
        std::this_thread::sleep_for(milliseconds(300));
        (void)Succeeds({"pkill", "-9", "-P", redis_pid});
        std::this_thread::sleep_for(milliseconds(500));
        EXPECT_NE(redis_->Cli({"SET", "msgx:test:probe", "1"}).find("MISCONF"), std::string::npos);
      },
      [&] {
        redis_->Cli({"CONFIG", "SET", "rdb-key-save-delay", "0"});
        redis_->Cli({"BGSAVE"});
        for (int i = 0; i < 100; ++i) {
          if (redis_->Cli({"INFO", "persistence"}).find("rdb_last_bgsave_status:ok") !=
              std::string::npos) {
            break;
          }
          std::this_thread::sleep_for(milliseconds(100));
        }
        redis_->Cli({"CONFIG", "SET", "save", ""});
        EXPECT_EQ(redis_->Cli({"DEL", "msgx:test:probe"}).find("MISCONF"), std::string::npos);
      });
  fault(
      "the own database read-only",
      [&] {
        own_pg_->Psql("postgres",
                      "ALTER DATABASE " + own_db_ + " SET default_transaction_read_only = on");
        terminate(false);
      },
      [&] {
        own_pg_->Psql("postgres",
                      "ALTER DATABASE " + own_db_ + " SET default_transaction_read_only = off");
        terminate(false);
      });
  fault(
      "every connection terminated",
      [&] {
        for (int i = 0; i < FaultSeconds() * 2; ++i) {
          terminate(true);
          std::this_thread::sleep_for(milliseconds(500));
        }
      },
      [] {});
  fault(
      "the broker down", [&] { kafka_->SetBrokerDown(); }, [&] { kafka_->SetBrokerUp(); });
  const std::string filler = state_dir_ + "/filler";
  if (tmpfs.Mounted()) {
    fault(
        "state.dir full",
        [&] {
          ASSERT_TRUE(FillUp(state_dir_, filler));
          // The fault is on once a write has met it.
          for (int i = 0; i < 300 && !LogHas("msgx keeps free"); ++i) {
            std::this_thread::sleep_for(milliseconds(100));
          }
        },
        [&] { std::filesystem::remove(filler); });
  }
  flowing = false;
  traffic.join();

  const std::int64_t rows = MailboxRows();
  const bool ok = WaitSettled(rows, seconds(240));
  std::this_thread::sleep_for(seconds(2));  // let the consumers drain
  consumers.Finish();
  ASSERT_TRUE(ok) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);

  // Each fault was met, as an outage.
  auto log = ReadFileToString(msgx_log_);
  ASSERT_TRUE(log.ok());
  std::vector<std::string> met = {"OOM command not allowed", "MISCONF", "read-only transaction",
                                  "not connected", "INFRA: mailbox"};
  if (tmpfs.Mounted()) met.emplace_back("msgx keeps free");
  for (const std::string& needle : met) {
    EXPECT_NE(log->find(needle), std::string::npos) << "never met: " << needle;
  }
  EXPECT_EQ(log->find("ALARM"), std::string::npos) << Log();

  // Most generated rows changed a flight (some set a value another row of
  // the same batch has just set): the traffic was real.
  const auto targets = EventsByTarget();
  EXPECT_GT(rows - loaded, 40 * 10) << "the traffic did not arrive";
  EXPECT_GE(targets.at("KAFKA:msg"), (rows - loaded) / 2)
      << rows << " rows, " << loaded << " loaded";
  // Every event reached Kafka exactly once (a read_committed consumer,
  // docs/dispatch.md#exactly-once), in per-flight order.
  const std::set<std::string> ids = EventIdsInKeyOrder(consumed[topic_msg_]);
  EXPECT_EQ(static_cast<std::int64_t>(ids.size()), targets.at("KAFKA:msg"));
  EXPECT_EQ(consumed[topic_msg_].size(), ids.size()) << "events delivered twice";
  testing::ExpectRefoldVerifies(Env(), std::chrono::minutes(5));
}

namespace {

TEST_F(PipelineTest, FaultsWhileTrafficFlowsLoseNothing) { FaultRun(); }

// The pipeline with a MariaDB mailbox (docs/operations.md#running-against-mariadbmysql):
// mailbox.url is a mysql:// URL to a throwaway MariaDB server, loaded and
// fed the same rows; "every connection terminated" kills msgx's MariaDB
// connections too (KILL USER).
class PipelineMariaDbTest : public PipelineTest {
 protected:
  void SetUp() override {
    maria_mailbox_ = true;
    PipelineTest::SetUp();
  }
};

TEST_F(PipelineMariaDbTest, FaultsWhileTrafficFlowsLoseNothing) { FaultRun(); }

// A full state.dir at start-up is an outage too: msgx waits for 64 MiB
// free, says why in /readyz, and starts once there is (a tmpfs filled by
// fallocate; skipped where this machine may not mount one).
TEST_F(PipelineTest, AFullDiskAtStartUpIsWaitedOut) {
  const std::string mount = state_dir_ + "/fs";
  ScopedTmpfs tmpfs(mount, "512m");
  if (!tmpfs.Mounted()) GTEST_SKIP() << "cannot mount a tmpfs here";
  const std::string filler = mount + "/filler";
  ASSERT_TRUE(FillUp(mount, filler));
  const std::int64_t rows = LoadMailbox(0);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const pid_t pid =
      StartMsgx({"MSGX_STATE_DIR=" + mount, "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port)});
  const auto [status, body] = ReadyzOnceItSays(*port, "free space", 100);
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("waiting for free space to open the stores: state.dir has 0 MiB free"),
            std::string::npos)
      << body;
  std::this_thread::sleep_for(seconds(1));
  EXPECT_FALSE(PollExit(pid).has_value()) << Log();
  std::filesystem::remove(filler);
  EXPECT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  // The fold stage reports the space left: above the reserve now, within the
  // 512 MB mount.
  const auto free_bytes = MetricSample(*port, "msgx_state_dir_free_bytes");
  ASSERT_TRUE(free_bytes.has_value());
  EXPECT_GE(*free_bytes, 64.0 * (1 << 20));
  EXPECT_LE(*free_bytes, 512.0 * (1 << 20));
  StopMsgx(pid);
}

}  // namespace
}  // namespace msgx
