// PipelineTest: the fixture of the `msgx run` end-to-end tests
// (tests/integration/pipeline_*_test.cc), every part real: the mailbox and
// msgx's database on two PostgreSQL 15 servers (or the mailbox on MariaDB,
// maria_mailbox_), the mirror on Redis 7, the outbox dispatched to
// librdkafka's Kafka-protocol mock cluster, and the msgx binary itself,
// started as a child process.
//
// The servers are started once per test suite and shared by its tests;
// each test gets its own database of msgx (migrated), its own topics (event
// keys restart at 0 with every log), an empty mailbox, a flushed Redis and
// its own state.dir, whose msgx.log receives msgx's stderr.
//
// Thread-safety: one test thread; Consumers' threads only write their own
// vector and flag.
#pragma once

#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/support/fixtures.h"
#include "tests/support/pipeline_check.h"
#include "tests/support/servers.h"

namespace msgx::testing {

class PipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite();
  static void TearDownTestSuite();
  void SetUp() override;

  // The mailbox: the PostgreSQL one, or, in PipelineMariaDbTest, MariaDB's
  // (msgx's account there is `msgx`, which no fixture uses).
  std::string MailboxUrl() const;
  // What the mailbox answers to `sql`, as its client prints it (as root on
  // MariaDB).
  std::string MailboxSql(const std::string& sql) const;

  // msgx's environment: this test's servers, topics and state.dir, a 50 ms
  // poll, no scheduled sweep, warnings only.
  std::vector<std::string> Env() const;
  // Env() with `more` added; an entry of `more` replaces Env()'s of the same
  // name.
  std::vector<std::string> EnvWith(const std::vector<std::string>& more) const;

  // `msgx run` with EnvWith(more_env), its stderr appended to msgx_log_,
  // killed with the test process; -1 (and a failure) when it did not start.
  pid_t StartMsgx(const std::vector<std::string>& more_env = {});
  void StopMsgx(pid_t pid);

  // The quickstart corpus (`msgx dev load`), then `generated` rows made
  // from its FLOP STND/RENO/RUNW/REMC/TRML messages with fresh SEQNs and
  // their value cycling through five variants, so that every generated
  // message changes a flight. Returns the mailbox's row count.
  std::int64_t LoadMailbox(int generated);
  // `n` more such rows, their SEQNs from seqn_base + 1.
  void AddGenerated(int n, int seqn_base);

  // Until every mailbox row has its proc_state row, the mirror is at
  // PostgreSQL's offset and every event is SENT; false on timeout.
  bool WaitSettled(std::int64_t rows, std::chrono::milliseconds timeout);
  // Polls `done` every 200 ms for up to a minute; its last answer.
  static bool WaitFor(const std::function<bool()>& done);

  // A copy of a FLOP STND row under the unknown type ZZZZ, which the fold
  // ends DEAD UNSUPPORTED; its mailbox id ("" when the insert failed).
  // PostgreSQL mailbox only.
  std::string InsertUnsupportedRow();

  PipelineCheckInput CheckInput() const;
  void ExpectConsistent(std::int64_t rows);

  // Events per target (msg_event_state: live and compacted).
  std::map<std::string, std::int64_t> EventsByTarget();
  std::int64_t MailboxRows();
  // The one integer `sql` answers on msgx's database.
  std::int64_t OwnCount(const std::string& sql);
  // msgx:mirror's offset in Redis (-1: none).
  std::int64_t MirrorOffset();
  // The state store's applied offset, read-only while msgx runs (-1: none).
  std::int64_t FoldedOffset();

  // MSGX_TEST_OUTAGE_SECONDS, default 8 (the full runs use 30).
  static int OutageSeconds();

  // The distinct msgx-event-ids of `messages`, checking on the way that
  // each key's "version" never goes down from one event's first appearance
  // to the next (callers compare the count with the messages read: exactly
  // once for read_committed, docs/dispatch.md#exactly-once).
  static std::set<std::string> EventIdsInKeyOrder(const std::vector<ConsumedMessage>& messages);

  // Read_committed consumers of the three topics, run beside msgx: the mock
  // cluster keeps only the tail of a partition, so they read events as they
  // arrive. Finish() (or the destructor) stops them once they have drained.
  struct Consumers {
    std::atomic<bool> settled{false};
    std::map<std::string, std::vector<ConsumedMessage>> consumed;
    std::atomic<bool> ready[3] = {false, false, false};  // one per topic, set by its thread
    std::vector<std::thread> threads;
    void Finish();
    ~Consumers() { Finish(); }
  };
  // Starts *c's consumers, each reading for at most `limit`, and waits
  // until every one is ready.
  void StartConsumers(Consumers* c, std::chrono::milliseconds limit);

  // `msgx replay --msg <msg_id>` against this test's services: true when it
  // queued the replay (exit 0); a failure with its output otherwise.
  bool QueueReplay(const std::string& msg_id);

  // Whether msgx's log holds `needle`.
  bool LogHas(const std::string& needle) const;
  // The log's last 40 lines, without librdkafka's own connection noise.
  std::string Log() const;

  // The fault run (FaultsWhileTrafficFlowsLoseNothing), on this fixture's
  // mailbox (tests/integration/pipeline_fault_test.cc).
  void FaultRun();

  static MariaDbServer* maria_;  // PipelineMariaDbTest's mailbox, started by it
  bool maria_mailbox_ = false;   // the mailbox is maria_'s, not pg_'s
  static PgServer* pg_;          // the mailbox's (another team's) server
  static PgServer* own_pg_;      // msgx's own database server
  static RedisServer* redis_;
  static KafkaMock* kafka_;
  static int n_;
  std::string own_db_;
  std::string own_url_;
  std::string topic_msg_, topic_schd_, topic_ref_;
  std::string state_dir_;
  std::string msgx_log_;  // msgx's stderr: in the first state_dir_, wherever that moves
};

// Answers of GET `path` on 127.0.0.1:`port` within `timeout`: the first
// one that comes back at all.
httplib::Result GetSoon(int port, const std::string& path, std::chrono::milliseconds timeout);

// The value of the sample `series` (its name and labels as exposed, e.g.
// `msgx_job_rows_total{job_name="event-retention"}`) on /metrics of the
// process on 127.0.0.1:`port`; nullopt when nothing answered or there is no
// such sample.
std::optional<double> MetricSample(int port, const std::string& series);

// /readyz of the process on `port`, asked every 100 ms (at most `tries`
// times) until its body holds `needle`: the last answer's status and body
// (0 and "" when none came).
std::pair<int, std::string> ReadyzOnceItSays(int port, const std::string& needle, int tries);

}  // namespace msgx::testing
