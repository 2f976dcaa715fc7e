// `msgx run` end to end with every part real (issues 5 and 6): the mailbox
// and msgx's database on PostgreSQL 15, the mirror on Redis 7, the outbox
// dispatched to librdkafka's Kafka-protocol mock cluster, and the binary
// itself. The quickstart corpus plus a generated stream of 10,000 messages
// flows through; then PipelineCheck (tests/support/pipeline_check.h)
// compares PostgreSQL and Redis with the state store and an independent
// re-fold, and a read_committed consumer reads every event back.
//
// The same fixture drives the crash, outage and leadership tests.
#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>
#include <signal.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <sstream>
#include <thread>
#include <variant>

#include "base/subprocess.h"
#include "state/log_record.h"
#include "state/log_store.h"
#include "state/state_store.h"
#include "stream/capture/mailbox_schema.h"
#include "tests/support/fixtures.h"
#include "tests/support/kafka_check.h"
#include "tests/support/pipeline_check.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dirs.h"
#include "tools/corpus_loader.h"

namespace msgx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class PipelineTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pg_ = testing::PgServer::Start().release();
    pg_->CreateDatabase("aodb");
    pg_->Psql("aodb", kLocalMailboxDdl);
    own_pg_ = testing::PgServer::Start().release();
    redis_ = testing::RedisServer::Start().release();
    kafka_ = testing::KafkaMock::Start().release();
  }
  static void TearDownTestSuite() {
    delete maria_;
    maria_ = nullptr;
    delete kafka_;
    delete redis_;
    delete pg_;
    delete own_pg_;
    own_pg_ = nullptr;
    kafka_ = nullptr;
    redis_ = nullptr;
    pg_ = nullptr;
  }

  void SetUp() override {
    own_db_ = "msgx_p" + std::to_string(++n_);
    // Topics of this test only: event keys restart at 0 with every log.
    topic_msg_ = "events." + own_db_;
    topic_schd_ = "schedule." + own_db_;
    topic_ref_ = "reference." + own_db_;
    for (const std::string& t : {topic_msg_, topic_schd_, topic_ref_}) kafka_->CreateTopic(t);
    own_url_ = testing::CreateMigratedDatabase(own_pg_, own_db_);
    pg_->Psql("aodb", "TRUNCATE cminmsgs");
    if (maria_mailbox_) {
      if (maria_ == nullptr) maria_ = testing::MariaDbServer::Start().release();
      maria_->Sql("mysql", "DROP DATABASE IF EXISTS aodb; CREATE DATABASE aodb");
      maria_->Sql("aodb", kLocalMariaDbMailboxDdl);
    }
    auto dir = testing::MakeOwnedTempDir("pipeline", std::nullopt);
    ASSERT_TRUE(dir.ok());
    state_dir_ = *dir;
    msgx_log_ = state_dir_ + "/msgx.log";
    redis_->Cli({"FLUSHALL"});
  }

  // The mailbox: the PostgreSQL one, or, in PipelineMariaDbTest, MariaDB's
  // (msgx's account there is `msgx`, which no fixture uses).
  std::string MailboxUrl() const { return maria_mailbox_ ? maria_->Url("aodb") : pg_->Url("aodb"); }
  // What the mailbox answers to `sql`, as its client prints it (as root on
  // MariaDB).
  std::string MailboxSql(const std::string& sql) const {
    return maria_mailbox_ ? maria_->Sql("aodb", sql) : pg_->Psql("aodb", sql);
  }

  std::vector<std::string> Env() const {
    return {"MSGX_MAILBOX_URL=" + MailboxUrl(), "MSGX_POSTGRES_URL=" + own_url_,
            "MSGX_REDIS_URL=" + redis_->Url(),
            "MSGX_KAFKA_BOOTSTRAP_SERVERS=" + kafka_->Bootstrap(), "MSGX_STATE_DIR=" + state_dir_,
            "MSGX_KAFKA_TOPICS_MSG=" + topic_msg_, "MSGX_KAFKA_TOPICS_SCHD=" + topic_schd_,
            "MSGX_KAFKA_TOPICS_REF=" + topic_ref_, "MSGX_HTTP_LISTEN=127.0.0.1:0",
            "MSGX_PIPELINE_POLL_INTERVAL=50ms",
            // No scheduled sweep unless a test asks (some count records).
            "MSGX_HISTORY_SWEEP_AT=off", "MSGX_SCHD_FLUSH_PERIOD=200ms", "MSGX_LOG_LEVEL=warn"};
  }

  // Env() with `more` added; an entry of `more` replaces Env()'s of the same
  // name.
  std::vector<std::string> EnvWith(const std::vector<std::string>& more) const {
    return testing::EnvWith(Env(), more);
  }

  pid_t StartMsgx(const std::vector<std::string>& more_env = {}) {
    SpawnOptions o;
    o.argv = {MSGX_BINARY, "run"};
    o.extra_env = EnvWith(more_env);
    o.stderr_path = msgx_log_;
    o.append_output = true;
    o.parent_death_signal = SIGKILL;
    auto pid = Spawn(o);
    EXPECT_TRUE(pid.ok()) << pid.status().ToString();
    return pid.ok() ? *pid : -1;
  }

  // The quickstart corpus (`msgx dev load`), then `generated` rows made
  // from its FLOP STND/RENO/RUNW/REMC/TRML messages with fresh SEQNs and
  // their value cycling through five variants, so that every generated
  // message changes a flight.
  std::int64_t LoadMailbox(int generated) {
    auto plan = app::LoadCorpus(MSGX_CORPUS_DIR, MailboxUrl(), "cminmsgs", "Asia/Shanghai",
                                *SystemClock::Default());
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    if (generated > 0) AddGenerated(generated, 500'000);
    return MailboxRows();
  }

  void AddGenerated(int n, int seqn_base) {
    if (maria_mailbox_) {
      // The same rows in MariaDB's SQL: its SEQUENCE engine's seq_1_to_<n>
      // for generate_series, and a backslash escaped in string literals.
      const std::string base = std::to_string(seqn_base);
      const std::string templates =
          "FROM cminmsgs WHERE cminmsgs_subsystem_type = 'FLOP' AND cminmsgs_subsystem_subtype IN "
          "('STND','RENO','RUNW','REMC','TRML')";
      maria_->Sql(
          "aodb",
          "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) "
          "SELECT REGEXP_REPLACE(REGEXP_REPLACE(t.xml, '<SEQN>[0-9]+</SEQN>', CONCAT('<SEQN>', " +
              base +
              " + g.seq, '</SEQN>')), '<(STND|RENO|RUNW|REMC|TRML)>([^<]+)</', "
              "CONCAT('<\\\\1>\\\\2', ((" +
              base + " + g.seq) DIV c.n) % 5, '</')), NOW(), 'VALID' FROM seq_1_to_" +
              std::to_string(n) +
              " g JOIN (SELECT ROW_NUMBER() OVER (ORDER BY cminmsgs_id) - 1 AS id, "
              "cminmsgs_clob_msg AS xml " +
              templates + ") t JOIN (SELECT count(*) AS n " + templates +
              ") c ON t.id = g.seq % c.n");
      return;
    }
    pg_->Psql("aodb",
              "CREATE TEMP TABLE tpl AS SELECT row_number() OVER (ORDER BY cminmsgs_id) - 1 AS id, "
              "cminmsgs_clob_msg AS xml FROM cminmsgs WHERE cminmsgs_subsystem_type = 'FLOP' "
              "AND cminmsgs_subsystem_subtype IN ('STND','RENO','RUNW','REMC','TRML'); "
              "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) "
              "SELECT regexp_replace(regexp_replace(t.xml, '<SEQN>[0-9]+</SEQN>', '<SEQN>' || (" +
                  std::to_string(seqn_base) +
                  " + g) || '</SEQN>'), '<(STND|RENO|RUNW|REMC|TRML)>([^<]+)</', "
                  "'<\\1>\\2' || (((" +
                  std::to_string(seqn_base) +
                  " + g) / (SELECT count(*) FROM tpl)) % 5) || '</'), now(), 'VALID' "
                  "FROM generate_series(1, " +
                  std::to_string(n) + ") g JOIN tpl t ON t.id = g % (SELECT count(*) FROM tpl);");
  }

  // Until every mailbox row has its proc_state row, the mirror is at
  // PostgreSQL's offset and every event is SENT; false on timeout.
  bool WaitSettled(std::int64_t rows, milliseconds timeout) {
    return testing::WaitSettled(own_url_, *redis_, rows, timeout);
  }

  void StopMsgx(pid_t pid) { ASSERT_TRUE(StopProcess(pid, SIGTERM, seconds(30)).ok()); }

  // Polls `done` every 200 ms for up to a minute; its last answer.
  static bool WaitFor(const std::function<bool()>& done) {
    const auto deadline = std::chrono::steady_clock::now() + seconds(60);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(milliseconds(200));
    }
    return done();
  }

  // A copy of a FLOP STND row under the unknown type ZZZZ, which the fold
  // ends DEAD UNSUPPORTED; its mailbox id ("" when the insert failed).
  std::string InsertUnsupportedRow() {
    const std::string inserted = pg_->Psql(
        "aodb",
        "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) "
        "SELECT replace(cminmsgs_clob_msg, '<TYPE>FLOP</TYPE>', '<TYPE>ZZZZ</TYPE>'), now(), "
        "'VALID' FROM cminmsgs WHERE cminmsgs_subsystem_subtype = 'STND' LIMIT 1 "
        "RETURNING cminmsgs_id");
    return inserted.substr(0, inserted.find_first_of(" \n"));
  }

  testing::PipelineCheckInput CheckInput() const {
    testing::PipelineCheckInput in;
    in.state_dir = state_dir_;
    in.mailbox_url = MailboxUrl();
    in.own_url = own_url_;
    in.redis_url = redis_->Url();
    return in;
  }

  std::map<std::string, std::int64_t> EventsByTarget() {
    std::map<std::string, std::int64_t> out;
    pqxx::connection c(own_url_);
    pqxx::nontransaction nt(c);
    for (const auto& row : nt.exec("SELECT target, count(*) FROM msg_event_state GROUP BY 1")) {
      out[row[0].as<std::string>()] = row[1].as<std::int64_t>();
    }
    return out;
  }

  std::int64_t MailboxRows() {
    return std::strtoll(MailboxSql("SELECT count(*) FROM cminmsgs").c_str(), nullptr, 10);
  }

  std::int64_t OwnCount(const std::string& sql) {
    pqxx::connection c(own_url_);
    pqxx::nontransaction nt(c);
    return nt.exec1(sql)[0].as<std::int64_t>();
  }

  std::int64_t MirrorOffset() {
    const std::string out = redis_->Cli({"HGET", "msgx:mirror", "offset"});
    if (out.empty() || !std::isdigit(static_cast<unsigned char>(out[0]))) return -1;
    return std::stoll(out);
  }

  // The state store's applied offset, read-only while msgx runs (-1: none).
  std::int64_t FoldedOffset() {
    auto store = StateStore::Open(state_dir_ + "/state", {false, true});
    if (!store.ok()) return -1;
    auto meta = (*store)->ReadMeta();
    return meta.ok() ? meta->applied_offset : -1;
  }

  void ExpectConsistent(std::int64_t rows) {
    testing::ExpectPipelineConsistent(CheckInput(), rows);
  }

  // MSGX_TEST_OUTAGE_SECONDS, default 8 (the full runs use 30).
  static int OutageSeconds() {
    const char* secs = std::getenv("MSGX_TEST_OUTAGE_SECONDS");
    return secs ? std::atoi(secs) : 8;
  }

  // The distinct msgx-event-ids of `messages`, checking on the way that
  // each key's "version" never goes down from one event's first appearance
  // to the next (callers compare the count with the messages read: exactly
  // once for read_committed, docs/dispatch.md#exactly-once).
  static std::set<std::string> EventIdsInKeyOrder(
      const std::vector<testing::ConsumedMessage>& messages) {
    std::set<std::string> ids;
    std::map<std::string, std::int64_t> last_version;
    for (const auto& m : messages) {
      if (!ids.insert(m.headers.at("msgx-event-id")).second) continue;
      const auto v = std::stoll(m.value.substr(m.value.find("\"version\":") + 10));
      EXPECT_GE(v, last_version[m.key]) << m.key;
      last_version[m.key] = v;
    }
    return ids;
  }

  // Read_committed consumers of the three topics, run beside msgx: the mock
  // cluster keeps only the tail of a partition, so they read events as they
  // arrive. Finish() (or the destructor) stops them once they have drained.
  struct Consumers {
    std::atomic<bool> settled{false};
    std::map<std::string, std::vector<testing::ConsumedMessage>> consumed;
    std::atomic<bool> ready[3] = {false, false, false};  // one per topic, set by its thread
    std::vector<std::thread> threads;
    void Finish() {
      settled = true;
      for (auto& t : threads) t.join();
      threads.clear();
    }
    ~Consumers() { Finish(); }
  };
  // Starts *c's consumers, each reading for at most `limit`, and waits
  // until every one is ready.
  void StartConsumers(Consumers* c, milliseconds limit) {
    for (const std::string& topic : {topic_msg_, topic_ref_, topic_schd_}) c->consumed[topic];
    c->threads.reserve(c->consumed.size());
    int k = 0;
    for (auto& [topic, out] : c->consumed) {
      c->threads.emplace_back([this, c, limit, t = topic, o = &out, r = &c->ready[k++]] {
        *o = testing::ConsumeTopicUntil(
            kafka_->Bootstrap(), t, SIZE_MAX, limit, [c] { return c->settled.load(); }, r);
      });
    }
    for (auto& r : c->ready) {
      for (int i = 0; i < 300 && !r; ++i) std::this_thread::sleep_for(milliseconds(100));
      ASSERT_TRUE(r) << "consumer not ready";
    }
  }

  // Whether msgx's log holds `needle`.
  bool LogHas(const std::string& needle) const {
    auto log = ReadFileToString(msgx_log_);
    return log.ok() && log->find(needle) != std::string::npos;
  }

  std::string Log() const {
    SpawnOptions o;
    // The last lines, without librdkafka's own connection noise.
    o.argv = {"sh", "-c", "grep -v '\"component\":\"kafka\"' '" + msgx_log_ + "' | tail -n 40"};
    auto out = RunCommand(o, "", seconds(5));
    return out.ok() ? out->out : "";
  }

  // The fault run (FaultsWhileTrafficFlowsLoseNothing), on this fixture's
  // mailbox.
  void FaultRun();

  static testing::MariaDbServer* maria_;  // PipelineMariaDbTest's mailbox, started by it
  bool maria_mailbox_ = false;            // the mailbox is maria_'s, not pg_'s
  static testing::PgServer* pg_;          // the mailbox's (another team's) server
  static testing::PgServer* own_pg_;      // msgx's own database server
  static testing::RedisServer* redis_;
  static testing::KafkaMock* kafka_;
  static int n_;
  std::string own_db_;
  std::string own_url_;
  std::string topic_msg_, topic_schd_, topic_ref_;
  std::string state_dir_;
  std::string msgx_log_;  // msgx's stderr: in the first state_dir_, wherever that moves
};

testing::MariaDbServer* PipelineTest::maria_ = nullptr;
testing::PgServer* PipelineTest::pg_ = nullptr;
testing::PgServer* PipelineTest::own_pg_ = nullptr;
testing::RedisServer* PipelineTest::redis_ = nullptr;
testing::KafkaMock* PipelineTest::kafka_ = nullptr;
int PipelineTest::n_ = 0;

TEST_F(PipelineTest, HappyPathCorpusAndGeneratedStreamReachEveryStore) {
  LoadMailbox(0);
  // Consumers run beside msgx and the stream arrives over time: the mock
  // cluster keeps only the tail of a partition (about 1,800 of these
  // events), so a 10,000-message burst could not be read back whole.
  Consumers consumers;
  StartConsumers(&consumers, seconds(300));
  auto& consumed = consumers.consumed;
  const pid_t pid = StartMsgx();
  for (int i = 0; i < 20; ++i) {
    AddGenerated(500, 500'000 + 500 * i);
    std::this_thread::sleep_for(milliseconds(400));
  }
  const std::int64_t rows = MailboxRows();
  ASSERT_GT(rows, 10'000);
  const bool ok = WaitSettled(rows, seconds(240));
  std::this_thread::sleep_for(seconds(2));  // let the consumers drain
  consumers.Finish();
  ASSERT_TRUE(ok) << Log();
  StopMsgx(pid);

  const auto check = testing::CheckPipeline(CheckInput());
  for (const auto& p : check.problems) ADD_FAILURE() << p;
  EXPECT_EQ(check.outcomes, rows);
  EXPECT_GT(check.events, rows / 2);

  // Outcomes as the corpus says (docs/fold.md#outcome-rules): the malformed
  // message is DEAD.
  pqxx::connection c(own_url_);
  pqxx::nontransaction nt(c);
  for (const auto& row : nt.exec("SELECT state, split_part(coalesce(last_error, ''), ':', 1), "
                                 "count(*) FROM proc_state GROUP BY 1, 2 ORDER BY 3 DESC")) {
    std::printf("outcome %s %s: %s\n", row[0].c_str(), row[1].c_str(), row[2].c_str());
  }
  auto dead =
      nt.exec("SELECT p.error_class FROM proc_state p WHERE p.state = 'DEAD' ORDER BY p.msg_id");
  ASSERT_GE(dead.size(), 1u);
  EXPECT_EQ(dead[0][0].as<std::string>(), "MALFORMED");
  EXPECT_EQ(nt.exec1("SELECT count(*) FROM proc_state WHERE state NOT IN "
                     "('SUCCEEDED','SKIPPED','DEAD') OR last_error IS NULL AND state <> "
                     "'SUCCEEDED'")[0]
                .as<int>(),
            0);

  // Every event reached Kafka, read_committed, each id at least once.
  const auto targets = EventsByTarget();
  ASSERT_GT(targets.at("KAFKA:msg"), 0);
  const auto& msgs = consumed[topic_msg_];
  const std::set<std::string> ids = EventIdsInKeyOrder(msgs);
  EXPECT_EQ(static_cast<std::int64_t>(ids.size()), targets.at("KAFKA:msg"));
  if (targets.count("KAFKA:ref")) {
    const auto& refs = consumed[topic_ref_];
    std::set<std::string> ref_ids;
    for (const auto& m : refs) ref_ids.insert(m.headers.at("msgx-event-id"));
    EXPECT_EQ(static_cast<std::int64_t>(ref_ids.size()), targets.at("KAFKA:ref"));
  }
  const auto batches =
      nt.exec1(
            "SELECT count(DISTINCT batch_id) FROM msg_event_state WHERE target = 'KAFKA:schd'")[0]
          .as<std::int64_t>();
  ASSERT_GT(batches, 0);
  const auto& schd = consumed[topic_schd_];
  std::set<std::string> schd_ids;
  for (const auto& m : schd) schd_ids.insert(m.headers.at("msgx-event-id"));
  EXPECT_EQ(static_cast<std::int64_t>(schd_ids.size()), batches);
}

// Failpoints (test builds only) at each crash point between the stores, one
// process each, then kill -9s at random moments while rows flow; after the
// last, clean start everything is exactly once everywhere.
TEST_F(PipelineTest, CrashPointsAndKillsLoseNothingAndDuplicateNothing) {
  LoadMailbox(2'000);
  // One replayable DEAD message (UNSUPPORTED), replayed mid-way below.
  const std::string unsupported = pg_->Psql(
      "aodb",
      "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) "
      "SELECT replace(cminmsgs_clob_msg, '<TYPE>FLOP</TYPE>', '<TYPE>ZZZZ</TYPE>'), now(), "
      "'VALID' FROM cminmsgs WHERE cminmsgs_subsystem_subtype = 'STND' LIMIT 1 "
      "RETURNING cminmsgs_id");
  const std::string dead_id = unsupported.substr(0, unsupported.find_first_of(" \n"));
  ASSERT_FALSE(dead_id.empty());
  const std::vector<std::string> points = {
      "fold.committed:#4:kill",        // state committed; not mirrored, not applied
      "mirror.before_apply:#3:kill",   // mid-mirror: before the batch's Lua call
      "mirror.rebuild_chunk:#1:kill",  // mid-rebuild: temporary hash half filled
      "applier.committed:#3:kill",     // PostgreSQL committed; not yet recorded
  };
  int seqn = 600'000;
  for (const std::string& fp : points) {
    redis_->Cli({"DEL", "msgx:mirror"});  // so the next start rebuilds (the rebuild point)
    const pid_t pid = StartMsgx({"MSGX_TEST_FAILPOINTS=" + fp, "MSGX_PIPELINE_BATCH_MAX=50"});
    auto exit = WaitForExit(pid, seconds(120));
    ASSERT_TRUE(exit.ok()) << fp << " never fired\n" << Log();
    EXPECT_EQ(exit->code, -SIGKILL) << fp;
    AddGenerated(300, seqn += 1000);
  }
  // The replay is issued once the message is DEAD (a replay is resolved
  // against the outcome at its own offset), and msgx is killed right after.
  const pid_t replaying = StartMsgx();
  ASSERT_TRUE(WaitSettled(MailboxRows(), seconds(120))) << Log();
  SpawnOptions replay;
  replay.argv = {MSGX_BINARY, "replay", "--msg", dead_id};
  replay.extra_env = Env();
  auto queued = RunCommand(replay, "", seconds(60));
  ASSERT_TRUE(queued.ok());
  ASSERT_EQ(queued->status.code, 0) << queued->out << queued->err;
  std::this_thread::sleep_for(milliseconds(300));
  ASSERT_TRUE(StopProcess(replaying, SIGKILL, seconds(5)).ok());
  // kill -9 at pseudo-random moments while rows arrive.
  std::uint32_t x = 12345;
  const int kills =
      std::getenv("MSGX_TEST_CRASH_LOOPS") ? std::atoi(std::getenv("MSGX_TEST_CRASH_LOOPS")) : 3;
  for (int i = 0; i < kills; ++i) {
    const pid_t pid = StartMsgx({"MSGX_PIPELINE_BATCH_MAX=50"});
    AddGenerated(300, seqn += 1000);
    x = x * 1103515245u + 12345u;
    std::this_thread::sleep_for(milliseconds(300 + (x >> 16) % 1500));
    ASSERT_TRUE(StopProcess(pid, SIGKILL, seconds(5)).ok());
  }
  const std::int64_t rows = MailboxRows();
  const pid_t pid = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(180))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
  // The replayed message's row holds the new decision (ExpectConsistent:
  // equal to the state's, decided at the command's offset) and the old error.
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state WHERE msg_id = " + dead_id +
                     " AND state = 'DEAD' AND prev_error LIKE 'UNSUPPORTED:%'"),
            1);
  // What the kills did to Kafka: each message, duplicates included, is a
  // SENT event with exactly its payload, and from the oldest message the
  // mock broker still holds (it keeps the tail) every SENT event is there,
  // each flight's first appearing in outbox order. Duplicates are only
  // counted here: these kills land while msgx catches up with 300 rows, in
  // the middle of a batch's transaction now and then, and librdkafka's
  // mock shows that aborted transaction's messages to read_committed
  // consumers (a real broker does not; docs/dispatch.md#exactly-once).
  // crash_test.cc's loop and FaultsWhileTrafficFlowsLoseNothing require none.
  // For the same reason a kill can leave a batch's progress record without
  // the batch: those events, marked SENT by the next reconcile, are counted
  // too (tests/support/kafka_check.h).
  const auto kafka = testing::CheckKafkaTail(kafka_->Bootstrap(), topic_msg_, own_url_, "KAFKA:msg",
                                             /*require_once=*/false, msgx_log_);
  for (const auto& p : kafka.problems) ADD_FAILURE() << p;
  std::printf(
      "read %zu messages back, %d duplicates (same id, same bytes), %d missing that a reconcile "
      "marked SENT\n",
      kafka.read, kafka.duplicates, kafka.reconciled_missing);

  testing::ExpectRefoldVerifies(Env(), std::chrono::minutes(3));
}

// msgx's PostgreSQL stopped mid-stream: capture and the fold keep moving
// (they need no leadership); the stages that do (the applier, the mirror,
// the dispatchers) pause while the lock is lost; nothing is charged, and
// they catch up when it returns.
TEST_F(PipelineTest, PostgresOutageStallsOnlyTheApplier) {
  std::int64_t rows = LoadMailbox(1'000);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const pid_t pid = StartMsgx(
      {"MSGX_PIPELINE_BATCH_MAX=100", "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port)});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  const int outage = OutageSeconds();
  own_pg_->Stop();
  // Only once the service knows it does not lead do the new rows arrive.
  httplib::Client http("127.0.0.1", *port);
  bool lost = false;
  for (int i = 0; i < 120 && !lost; ++i) {
    auto res = http.Get("/status");
    rapidjson::Document doc;
    if (res && res->status == 200) doc.Parse(res->body.c_str());
    lost = res && res->status == 200 && !doc.HasParseError() && doc.HasMember("service") &&
           doc["service"].HasMember("leading") && !doc["service"]["leading"].GetBool();
    if (!lost) std::this_thread::sleep_for(milliseconds(250));
  }
  ASSERT_TRUE(lost) << Log();
  const std::int64_t folded_before = FoldedOffset();
  AddGenerated(1'000, 700'000);
  std::this_thread::sleep_for(seconds(outage));
  EXPECT_GT(FoldedOffset(), folded_before) << "capture and the fold must keep moving";
  own_pg_->Restart();
  rows = MailboxRows();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'DEAD'"), 0);
}

// Redis emptied, then restarted empty, mid-stream: the mirror rebuilds.
TEST_F(PipelineTest, RedisFlushAndRestartRebuildTheMirror) {
  std::int64_t rows = LoadMailbox(1'000);
  const pid_t pid = StartMsgx({"MSGX_PIPELINE_BATCH_MAX=100"});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  redis_->Cli({"FLUSHALL"});
  AddGenerated(500, 710'000);
  rows = MailboxRows();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  redis_->Restart();  // no persistence: it comes back empty
  AddGenerated(500, 720'000);
  rows = MailboxRows();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
}

// msgx's database restored to an earlier point: the applier re-applies from
// the restored offset, and nothing is missing or doubled.
TEST_F(PipelineTest, PostgresRestoredToAnEarlierPointIsReapplied) {
  std::int64_t rows = LoadMailbox(500);
  pid_t pid = StartMsgx({"MSGX_PIPELINE_BATCH_MAX=100"});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  own_pg_->Psql("postgres", "CREATE DATABASE " + own_db_ + "_snap TEMPLATE " + own_db_);
  const std::int64_t offset_then = OwnCount("SELECT applied_offset FROM pipeline");
  pid = StartMsgx({"MSGX_PIPELINE_BATCH_MAX=100"});
  AddGenerated(1'000, 730'000);
  rows = MailboxRows();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  own_pg_->Psql("postgres", "DROP DATABASE " + own_db_);
  own_pg_->Psql("postgres", "CREATE DATABASE " + own_db_ + " TEMPLATE " + own_db_ + "_snap");
  ASSERT_EQ(OwnCount("SELECT applied_offset FROM pipeline"), offset_then);
  pid = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
}

// The state store deleted while stopped (the log kept): it is rebuilt from
// the log, digests match PostgreSQL's, Redis rebuilds, and nothing new
// appears in PostgreSQL.
TEST_F(PipelineTest, LostStateStoreIsRebuiltAndCheckedByDigest) {
  const std::int64_t rows = LoadMailbox(1'000);
  pid_t pid = StartMsgx({"MSGX_PIPELINE_BATCH_MAX=100"});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  const auto events = OwnCount("SELECT count(*) FROM msg_event_state");
  const auto max_event = OwnCount("SELECT max(event_id) FROM msg_event_state");
  const auto outcomes_updated = OwnCount("SELECT count(*) FROM proc_state");
  std::filesystem::remove_all(state_dir_ + "/state");
  pid = StartMsgx({"MSGX_LOG_LEVEL=info"});
  // PostgreSQL and Redis look settled from the start (they hold the first
  // run's results): wait for the rebuild to reach PostgreSQL's offset first.
  for (int i = 0; i < 1200 && !LogHas("batch digests match"); ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state"), events);
  EXPECT_EQ(OwnCount("SELECT max(event_id) FROM msg_event_state"), max_event);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state"), outcomes_updated);
  EXPECT_NE(Log().find("batch digests match"), std::string::npos) << Log();
}

// A different log pointed at the same database refuses to write.
TEST_F(PipelineTest, ForeignLogIsRefused) {
  const std::int64_t rows = LoadMailbox(0);
  pid_t pid = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  const std::string first_dir = state_dir_;
  auto dir = testing::MakeOwnedTempDir("pipeline", std::nullopt);
  ASSERT_TRUE(dir.ok());
  state_dir_ = *dir;  // a fresh log
  pid = StartMsgx();
  auto exit = WaitForExit(pid, seconds(60));
  ASSERT_TRUE(exit.ok()) << Log();
  EXPECT_EQ(exit->code, 2);
  EXPECT_NE(Log().find("refusing to write"), std::string::npos) << Log();
  state_dir_ = first_dir;
}

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

// The broker down mid-stream (KafkaMock::SetBrokerDown): delivery
// stalls, nothing goes DEAD or is lost, per-key order holds, and delivery
// resumes by itself. MSGX_TEST_OUTAGE_SECONDS sets the outage (default 8;
// the documented full run uses 30).
TEST_F(PipelineTest, BrokerOutageStallsDeliveryAndResumes) {
  LoadMailbox(0);
  const pid_t pid = StartMsgx();
  AddGenerated(500, 800'000);
  ASSERT_TRUE(WaitSettled(MailboxRows(), seconds(120))) << Log();
  const int outage = OutageSeconds();
  kafka_->SetBrokerDown();
  AddGenerated(500, 801'000);
  std::this_thread::sleep_for(seconds(outage));
  const auto pending = OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'PENDING'");
  kafka_->SetBrokerUp();
  EXPECT_GT(pending, 0) << "nothing can be delivered while the broker is down";
  const std::int64_t rows = MailboxRows();
  ASSERT_TRUE(WaitSettled(rows, seconds(180))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'DEAD' OR attempts > 1"),
            0);
  // Read back by an outside read_committed consumer: every event, in order
  // per key. (A consumer connected through the outage stops receiving from
  // the mock cluster afterwards, so the check reads once delivery is done;
  // the topic is this test's own and below the mock's retention.)
  const auto want = OwnCount("SELECT count(*) FROM msg_event_state WHERE target = 'KAFKA:msg'");
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), topic_msg_, static_cast<size_t>(want),
                                   seconds(30));
  const std::set<std::string> ids = EventIdsInKeyOrder(got);
  EXPECT_EQ(static_cast<std::int64_t>(ids.size()), want);
}

// The mirror-before-dispatch gate
// (docs/dispatch.md#the-mirror-before-dispatch-gate): with the mirror unable to
// move (Redis stopped), nothing new is published; once Redis is back the mirror
// rebuilds and everything goes.
TEST_F(PipelineTest, NothingIsPublishedBeforeTheMirrorHoldsIt) {
  std::int64_t rows = LoadMailbox(0);
  const pid_t pid = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  const auto sent = OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'");
  redis_->Stop();
  AddGenerated(300, 810'000);
  rows = MailboxRows();
  for (int i = 0; i < 100 && OwnCount("SELECT count(*) FROM proc_state") < rows; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::this_thread::sleep_for(seconds(2));
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state"), rows) << "PostgreSQL keeps moving";
  EXPECT_GT(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'PENDING'"), 0);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), sent)
      << "published before the mirror held it";
  redis_->Restart();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
}

// I2 with Redis answering: the mirror is held behind (an injected bug stops
// it at its first batch after the initial build), not Redis. The
// dispatchers read the mirror's offset from Redis and publish nothing it does
// not hold, while PostgreSQL keeps moving; after a restart everything is
// delivered (docs/commit-protocol.md).
TEST_F(PipelineTest, NothingIsPublishedBeyondTheMirrorWhileRedisAnswers) {
  const pid_t pid = StartMsgx({"MSGX_TEST_FAILPOINTS=mirror.before_apply::error"});
  // Held once its first batch after the build failed (the build may come
  // before the fold's first batch: then it holds offset -1). The build may
  // also cover every record there is: then a row (it ends DEAD MALFORMED)
  // makes the next batch, every 2 s until the mirror meets the failpoint.
  for (int i = 0; i < 600 && !LogHas("ALARM: mirror stopped"); ++i) {
    if (i % 20 == 19) {
      pg_->Psql("aodb",
                "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, "
                "cminmsgs_status) VALUES ('<MSG/>', now(), 'VALID')");
    }
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_NE(Log().find("ALARM: mirror stopped: INTERNAL: failpoint mirror.before_apply"),
            std::string::npos)
      << Log();
  const std::int64_t held = MirrorOffset();
  std::int64_t rows = LoadMailbox(300);
  for (int i = 0; i < 600 && OwnCount("SELECT count(*) FROM proc_state") < rows; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  std::this_thread::sleep_for(seconds(2));  // time enough for a dispatcher to misbehave
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state"), rows) << "PostgreSQL keeps moving";
  EXPECT_EQ(MirrorOffset(), held) << "the mirror must be held";
  EXPECT_GT(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'PENDING'"), 0);
  EXPECT_EQ(
      OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT' AND state_version > " +
               std::to_string(held)),
      0)
      << "published beyond the mirror's offset " << held;
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  auto exit = WaitForExit(pid, seconds(60));
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->code, 1);  // a stage failed
  const pid_t again = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  StopMsgx(again);
  ExpectConsistent(rows);
}

// A weakened producer safety setting stops start-up, naming the key
// (docs/dispatch.md#producer-safety-settings).
TEST_F(PipelineTest, WeakenedProducerSettingIsRefusedAtStartup) {
  const pid_t pid = StartMsgx({"MSGX_KAFKA_PRODUCER_MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION=5"});
  auto exit = WaitForExit(pid, seconds(60));
  ASSERT_TRUE(exit.ok()) << Log();
  EXPECT_EQ(exit->code, 2);
  EXPECT_NE(Log().find("max.in.flight.requests.per.connection"), std::string::npos) << Log();
}

// A bug in one stage (an injected kInternal in the applier) stops that stage
// only: capture and the fold go on, /readyz names the failed stage, and
// msgx exits 1 when it is stopped, with the ALARM in its log.
TEST_F(PipelineTest, ABugInTheApplierStopsItAloneAndMsgxExitsOne) {
  const std::int64_t rows = LoadMailbox(0);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const pid_t pid = StartMsgx({"MSGX_TEST_FAILPOINTS=applier.step::error",
                               "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port)});
  httplib::Client http("127.0.0.1", *port);
  http.set_read_timeout(30, 0);
  rapidjson::Document doc;
  bool folded_with_applier_failed = false;
  for (int i = 0; i < 240 && !folded_with_applier_failed; ++i) {
    std::this_thread::sleep_for(milliseconds(250));
    auto res = http.Get("/status");
    if (!res || res->status != 200) continue;
    doc.Parse(res->body.c_str());
    if (doc.HasParseError() || !doc.HasMember("fold") || !doc["stages"].HasMember("applier")) {
      continue;
    }
    folded_with_applier_failed =
        doc["fold"]["applied_offset"].GetInt64() == rows &&  // offset 0: SETTINGS
        std::string(doc["stages"]["applier"]["state"].GetString()) == "failed";
  }
  ASSERT_TRUE(folded_with_applier_failed) << Log();
  EXPECT_NE(std::string(doc["stages"]["fold"]["state"].GetString()), "failed");
  EXPECT_NE(
      std::string(doc["stages"]["applier"]["reason"].GetString()).find("failpoint applier.step"),
      std::string::npos);
  auto ready = http.Get("/readyz");
  ASSERT_TRUE(ready);
  EXPECT_EQ(ready->status, 503);
  EXPECT_NE(ready->body.find("applier failed: INTERNAL: failpoint applier.step"), std::string::npos)
      << ready->body;
  EXPECT_EQ(OwnCount("SELECT count(*) FROM proc_state"), 0);  // nothing was applied
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  auto exit = WaitForExit(pid, seconds(60));
  ASSERT_TRUE(exit.ok());
  EXPECT_EQ(exit->code, 1);
  std::ifstream in(msgx_log_);
  std::stringstream log;
  log << in.rdbuf();
  EXPECT_NE(log.str().find("ALARM: applier stopped: INTERNAL: failpoint applier.step"),
            std::string::npos)
      << Log();
}

// Compares two status documents: the same keys everywhere, and the same
// values except the stages' counters and states, which move between calls.
void ExpectSameStatus(const rapidjson::Value& a, const rapidjson::Value& b,
                      const std::string& path) {
  ASSERT_EQ(a.GetType(), b.GetType()) << path;
  if (!a.IsObject()) {
    const bool volatile_field = path.rfind("/stages/", 0) == 0;
    if (!volatile_field) {
      EXPECT_TRUE(a == b) << path;
    }
    return;
  }
  std::set<std::string> ka, kb;
  for (auto m = a.MemberBegin(); m != a.MemberEnd(); ++m) ka.insert(m->name.GetString());
  for (auto m = b.MemberBegin(); m != b.MemberEnd(); ++m) kb.insert(m->name.GetString());
  EXPECT_EQ(ka, kb) << path;
  for (const std::string& k : ka) {
    std::string sub = path;
    sub += "/";
    sub += k;
    if (kb.count(k)) ExpectSameStatus(a[k.c_str()], b[k.c_str()], sub);
  }
}

// /status and `msgx status --json` are one document: on a quiesced pipeline
// they have the same keys and the same values.
TEST_F(PipelineTest, StatusFromHttpAndTheCliAgree) {
  const std::int64_t rows = LoadMailbox(0);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string listen = "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port);
  const pid_t pid = StartMsgx({listen});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  httplib::Client http("127.0.0.1", *port);
  http.set_read_timeout(30, 0);
  auto res = http.Get("/status");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  rapidjson::Document served;
  served.Parse(res->body.c_str());
  ASSERT_FALSE(served.HasParseError()) << res->body;
  SpawnOptions so;
  so.argv = {MSGX_BINARY, "status", "--json"};
  so.extra_env = EnvWith({listen});
  auto cli = RunCommand(so, "", seconds(60));
  ASSERT_TRUE(cli.ok());
  EXPECT_EQ(cli->status.code, 0) << cli->out << cli->err;
  rapidjson::Document printed;
  printed.Parse(cli->out.c_str());
  ASSERT_FALSE(printed.HasParseError()) << cli->out;
  ExpectSameStatus(served, printed, "");
  // What the document holds, read against the stores themselves.
  EXPECT_TRUE(printed["service"]["running"].GetBool());
  {
    pqxx::connection c(pg_->Url("aodb"));
    pqxx::nontransaction nt(c);
    EXPECT_EQ(printed["mailbox"]["max_id"].GetInt64(),
              nt.exec1("SELECT max(cminmsgs_id) FROM cminmsgs")[0].as<std::int64_t>());
  }
  EXPECT_EQ(printed["fold"]["lag"].GetInt64(), 0);
  EXPECT_EQ(printed["mirror"]["lag"].GetInt64(), 0);
  EXPECT_EQ(printed["postgres"]["lag"].GetInt64(), 0);
  EXPECT_EQ(printed["postgres"]["applied_offset"].GetInt64(),
            rows);  // offset 0 is the SETTINGS record
  std::int64_t outcomes = 0;
  for (auto m = printed["outcomes"].MemberBegin(); m != printed["outcomes"].MemberEnd(); ++m) {
    if (m->value.IsInt64()) outcomes += m->value.GetInt64();
  }
  EXPECT_EQ(outcomes, OwnCount("SELECT count(*) FROM proc_state"));
  for (const char* stage : {"capture", "intake", "fold", "mirror", "applier", "dispatch KAFKA:msg",
                            "dispatch KAFKA:schd", "dispatch KAFKA:ref"}) {
    ASSERT_TRUE(printed["stages"].HasMember(stage)) << stage;
    EXPECT_NE(std::string(printed["stages"][stage]["state"].GetString()), "failed") << stage;
  }
  EXPECT_EQ(printed["outbox"]["KAFKA:msg"]["pending"].GetInt64(), 0);
  StopMsgx(pid);
}

// Answers of GET `path` on 127.0.0.1:`port` within `timeout`: the first
// one that comes back at all.
httplib::Result GetSoon(int port, const std::string& path, milliseconds timeout) {
  httplib::Client http("127.0.0.1", port);
  http.set_connection_timeout(1, 0);
  http.set_read_timeout(30, 0);
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto res = http.Get(path);
    if (res || std::chrono::steady_clock::now() > deadline) return res;
    std::this_thread::sleep_for(milliseconds(100));
  }
}

// /readyz of the process on `port`, asked every 100 ms (at most `tries`
// times) until its body holds `needle`: the last answer's status and body
// (0 and "" when none came).
std::pair<int, std::string> ReadyzOnceItSays(int port, const std::string& needle, int tries) {
  std::pair<int, std::string> last{0, ""};
  for (int i = 0; i < tries; ++i) {
    auto res = GetSoon(port, "/readyz", seconds(5));
    if (!res) return last;
    last = {res->status, res->body};
    if (last.second.find(needle) != std::string::npos) break;
    std::this_thread::sleep_for(milliseconds(100));
  }
  return last;
}

// Health from the first second: a second process waiting for the state.dir
// lock, and a process started while PostgreSQL is down, each answer
// /healthz 200 at once and /readyz 503 with the reason, and stop cleanly.
TEST_F(PipelineTest, AWaitingProcessAnswersHealthAndSaysWhyItIsNotReady) {
  const std::int64_t rows = LoadMailbox(0);
  const pid_t leader = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();  // it holds the locks

  auto standby_port = FreeLoopbackPort();
  ASSERT_TRUE(standby_port.ok());
  const pid_t standby = StartMsgx({"MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*standby_port)});
  auto health = GetSoon(*standby_port, "/healthz", seconds(10));
  ASSERT_TRUE(health) << Log();
  EXPECT_EQ(health->status, 200);
  // Until it has tried the lock once.
  const auto [why_status, why] = ReadyzOnceItSays(*standby_port, "state.dir lock", 100);
  EXPECT_EQ(why_status, 503);
  EXPECT_NE(why.find("waiting for the state.dir lock"), std::string::npos) << why;
  ASSERT_EQ(::kill(standby, SIGTERM), 0);
  auto standby_exit = WaitForExit(standby, seconds(30));
  ASSERT_TRUE(standby_exit.ok());
  EXPECT_EQ(standby_exit->code, 0);
  StopMsgx(leader);

  // PostgreSQL unreachable at start-up: waiting for leadership, and saying so.
  auto closed = FreeLoopbackPort();
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(closed.ok() && port.ok());
  const pid_t lonely = StartMsgx(
      {"MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port),
       "MSGX_POSTGRES_URL=postgresql://127.0.0.1:" + std::to_string(*closed) + "/nowhere"});
  auto alive = GetSoon(*port, "/healthz", seconds(10));
  ASSERT_TRUE(alive) << Log();
  EXPECT_EQ(alive->status, 200);
  // Until the keeper has tried once.
  const auto [not_ready_status, not_ready_body] = ReadyzOnceItSays(*port, "unreachable", 50);
  EXPECT_EQ(not_ready_status, 503);
  EXPECT_NE(not_ready_body.find("not leading: PostgreSQL unreachable"), std::string::npos)
      << not_ready_body;
  ASSERT_EQ(::kill(lonely, SIGTERM), 0);
  auto lonely_exit = WaitForExit(lonely, seconds(30));
  ASSERT_TRUE(lonely_exit.ok());
  EXPECT_EQ(lonely_exit->code, 0);
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
  const std::vector<std::string> unreachable = {
      "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port),
      "MSGX_POSTGRES_URL=postgresql://127.0.0.1:" + std::to_string(*closed) + "/nowhere"};
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
void PipelineTest::FaultRun() {
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
  auto metrics = GetSoon(*port, "/metrics", seconds(5));
  ASSERT_TRUE(metrics);
  const std::string name = "\nmsgx_state_dir_free_bytes ";  // the sample, not # HELP
  const auto at = metrics->body.find(name);
  ASSERT_NE(at, std::string::npos) << metrics->body;
  const double free_bytes = std::stod(metrics->body.substr(at + name.size()));
  EXPECT_GE(free_bytes, 64.0 * (1 << 20));
  EXPECT_LE(free_bytes, 512.0 * (1 << 20));
  StopMsgx(pid);
}

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
  auto metrics = GetSoon(*port, "/metrics", seconds(5));
  ASSERT_TRUE(metrics);
  const std::string name = "msgx_job_rows_total{job_name=\"event-retention\"} ";
  const auto at = metrics->body.find(name);
  ASSERT_NE(at, std::string::npos) << metrics->body;
  EXPECT_GE(std::stod(metrics->body.substr(at + name.size())), 200.0);
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
  auto marks = GetSoon(*port, "/metrics", seconds(5));
  ASSERT_TRUE(marks);
  const std::string marked = "msgx_job_rows_total{job_name=\"processed-mark\"} ";
  const auto marked_at = marks->body.find(marked);
  ASSERT_NE(marked_at, std::string::npos) << marks->body;
  EXPECT_EQ(std::stod(marks->body.substr(marked_at + marked.size())), static_cast<double>(rows));
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
  auto archived = GetSoon(*port, "/metrics", seconds(5));
  ASSERT_TRUE(archived);
  const std::string moved = "msgx_job_rows_total{job_name=\"proc-state-archive\"} ";
  const auto moved_at = archived->body.find(moved);
  ASSERT_NE(moved_at, std::string::npos) << archived->body;
  EXPECT_EQ(std::stod(archived->body.substr(moved_at + moved.size())), static_cast<double>(rows));
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

  SpawnOptions replay;
  replay.argv = {MSGX_BINARY, "replay", "--msg", dead_id};
  replay.extra_env = Env();
  auto queued = RunCommand(replay, "", seconds(60));
  ASSERT_TRUE(queued.ok());
  ASSERT_EQ(queued->status.code, 0) << queued->out << queued->err;
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
  SpawnOptions replay;
  replay.argv = {MSGX_BINARY, "replay", "--msg", dead_id};
  replay.extra_env = Env();
  auto queued = RunCommand(replay, "", seconds(60));
  ASSERT_TRUE(queued.ok());
  ASSERT_EQ(queued->status.code, 0) << queued->out << queued->err;
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

// Hostile rows in the mailbox, each followed by normal traffic: every one
// ends terminal with a class, none stalls the rows behind it, and the
// values the fold writes fit their columns (docs/schema.md#bounded-values).
TEST_F(PipelineTest, HostileMessagesEndTerminalAndStallNothing) {
  LoadMailbox(0);
  // Templates from the corpus as loaded (fresh SEQNs, today's dates).
  // Templates from the corpus as loaded (today's dates), each copy with a
  // SEQN of its own so that it is not a duplicate of its template.
  int seqn = 900'000;
  auto from_template = [&](const std::string& type, const std::string& styp) {
    return "(SELECT regexp_replace(cminmsgs_clob_msg, '<SEQN>[^<]*</SEQN>', '<SEQN>" +
           std::to_string(++seqn) + "</SEQN>') FROM cminmsgs WHERE cminmsgs_subsystem_type = '" +
           type + "' AND cminmsgs_subsystem_subtype = '" + styp + "' LIMIT 1)";
  };
  const std::string airl_sql = from_template("AIRL", "ADD");
  const std::string flop_sql = from_template("FLOP", "REMC");
  const std::string flop2_sql = from_template("FLOP", "REMC");
  const std::string insert =
      "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) ";
  const std::vector<std::pair<std::string, std::string>> hostile = {
      {"300-character reference key",
       "SELECT regexp_replace(" + airl_sql +
           ", '<ITOP>[^<]*</ITOP>', '<ITOP>' || repeat('K', 300) || '</ITOP>')"},
      {"300-character FLID",
       "SELECT regexp_replace(" + flop_sql +
           ", '<FLID>[^<]*</FLID>', '<FLID>' || repeat('7', 300) || '</FLID>')"},
      {"200 kB of 4-byte UTF-8",
       "SELECT regexp_replace(" + flop2_sql +
           ", '<REMC>[^<]*</REMC>', '<REMC>' || repeat(chr(128512), 50000) || '</REMC>')"},
      {"SEQN over 64 bits", "SELECT regexp_replace(" + flop_sql +
                                ", '<SEQN>[^<]*</SEQN>', '<SEQN>99999999999999999999999</SEQN>')"},
      {"SEQN not a number",
       "SELECT regexp_replace(" + flop_sql + ", '<SEQN>[^<]*</SEQN>', '<SEQN>abc</SEQN>')"},
      {"empty row", "SELECT ''"},
      {"random bytes", "SELECT 'q#\\x01<<>>&&;;' || md5('x') || '</MSG>'"},
      {"20,000-deep nesting",
       "SELECT '<MSG>' || repeat('<A>', 20000) || repeat('</A>', 20000) || '</MSG>'"},
      {"entity bomb",
       "SELECT '<?xml version=\"1.0\"?><!DOCTYPE MSG [<!ENTITY a \"aaaaaaaaaa\">"
       "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]><MSG>&b;</MSG>'"},
      {"17 MB row", "SELECT '<MSG><META>' || repeat('x', 17000000) || '</META></MSG>'"},
  };
  std::vector<std::pair<std::string, std::int64_t>> ids;
  for (const auto& [what, select] : hostile) {
    std::string sql = insert;
    sql += "SELECT m, now(), 'VALID' FROM (";
    sql += select;
    sql += ") AS t(m) RETURNING cminmsgs_id";
    const std::string out = pg_->Psql("aodb", sql);
    ASSERT_FALSE(out.empty()) << what;
    ids.emplace_back(what, std::stoll(out));
    AddGenerated(5, 700'000 + static_cast<int>(ids.size()) * 100);
  }
  const std::int64_t rows = MailboxRows();
  const pid_t pid = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(180))) << Log();
  StopMsgx(pid);
  ExpectConsistent(rows);
  pqxx::connection c(own_url_);
  pqxx::nontransaction nt(c);
  for (const auto& [what, id] : ids) {
    pqxx::result r = nt.exec_params(
        "SELECT state, coalesce(error_class, ''), coalesce(last_error, '') FROM proc_state "
        "WHERE msg_id = $1",
        id);
    ASSERT_EQ(r.size(), 1u) << what;
    const std::string state = r[0][0].as<std::string>();
    EXPECT_TRUE(state == "SUCCEEDED" || state == "SKIPPED" || state == "DEAD") << what;
    if (state == "DEAD") {
      EXPECT_FALSE(r[0][1].as<std::string>().empty()) << what;
    }
    if (state != "SUCCEEDED") {
      EXPECT_FALSE(r[0][2].as<std::string>().empty()) << what;
    }
  }
  // The generated traffic behind them went through.
  EXPECT_EQ(nt.exec1("SELECT count(*) FROM proc_state WHERE state = 'DEAD' AND error_class "
                     "NOT IN ('MALFORMED', 'PROTOCOL', 'UNSUPPORTED', 'CODEC_ERROR')")[0]
                .as<std::int64_t>(),
            0);
  EXPECT_EQ(nt.exec1("SELECT max(length(rkey)) FROM ref_master")[0].as<std::int64_t>(), 200);
  EXPECT_EQ(
      nt.exec1("SELECT count(*) FROM ref_master WHERE rkey LIKE 'KKKK%'")[0].as<std::int64_t>(), 1);
}

// The graceful drain (docs/operations.md#stopping): SIGTERM while rows
// arrive. Capture stops; what it captured is folded, applied to PostgreSQL,
// mirrored to Redis and sent to Kafka (each event once) before msgx exits 0;
// the next start captures the rest and everything is exact.
TEST_F(PipelineTest, SigtermUnderLoadDeliversEverythingCapturedAndExitsZero) {
  LoadMailbox(0);
  Consumers consumers;
  StartConsumers(&consumers, seconds(300));
  const pid_t pid = StartMsgx({"MSGX_SHUTDOWN_DRAIN_TIMEOUT=60s", "MSGX_LOG_LEVEL=info"});
  std::atomic<bool> more{true};
  std::thread rows_flowing([&] {
    for (int i = 0; more; ++i) {
      AddGenerated(200, 700'000 + 200 * i);
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  // Delivery is under way before the signal.
  for (int i = 0;
       i < 600 && OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'") < 100;
       ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  const std::int64_t outcomes_at_signal = OwnCount("SELECT count(*) FROM proc_state");
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  auto exited = WaitForExit(pid, seconds(75));  // the 60 s bound, and the last steps
  more = false;
  rows_flowing.join();
  ASSERT_TRUE(exited.ok()) << Log();
  EXPECT_EQ(exited->code, 0) << Log();
  EXPECT_TRUE(LogHas("drained in")) << Log();
  std::this_thread::sleep_for(seconds(2));  // let the consumers read the last events
  consumers.Finish();

  // The fold reached the log's end, so every row not folded was never captured.
  {
    auto log = LogStore::Open(state_dir_ + "/log", SystemClock::Default());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ(FoldedOffset(), static_cast<std::int64_t>((*log)->next_offset()) - 1);
  }
  testing::PipelineCheckInput in = CheckInput();
  in.captured_only = true;
  const auto check = testing::CheckPipeline(in);
  for (const auto& p : check.problems) ADD_FAILURE() << p;
  const std::int64_t rows = MailboxRows();
  std::printf("drain: %lld outcomes at SIGTERM, %lld at exit, %lld rows not captured\n",
              static_cast<long long>(outcomes_at_signal), static_cast<long long>(check.outcomes),
              static_cast<long long>(check.unfolded));
  EXPECT_EQ(check.outcomes + check.unfolded, rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state WHERE state <> 'SENT'"), 0);
  // Kafka holds every event, each once.
  for (const auto& [target, topic] : std::vector<std::pair<std::string, std::string>>{
           {"KAFKA:msg", topic_msg_}, {"KAFKA:ref", topic_ref_}}) {
    const auto& got = consumers.consumed[topic];
    std::set<std::string> ids;
    for (const auto& m : got) ids.insert(m.headers.at("msgx-event-id"));
    EXPECT_EQ(ids.size(), got.size()) << target << ": an event sent twice";
    EXPECT_EQ(static_cast<std::int64_t>(ids.size()),
              OwnCount("SELECT count(*) FROM msg_event_state WHERE target = '" + target + "'"))
        << target;
  }
  std::set<std::string> batches;
  for (const auto& m : consumers.consumed[topic_schd_])
    batches.insert(m.headers.at("msgx-event-id"));
  EXPECT_EQ(batches.size(), consumers.consumed[topic_schd_].size());
  EXPECT_EQ(
      static_cast<std::int64_t>(batches.size()),
      OwnCount("SELECT count(DISTINCT batch_id) FROM msg_event_state WHERE target = 'KAFKA:schd'"));

  // The next start captures the rest.
  const pid_t again = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(180))) << Log();
  StopMsgx(again);
  ExpectConsistent(rows);
}

// A drain held open by a stalled output (the broker down): /readyz answers
// 503 "draining" at once; the bound ends the drain, msgx exits 0 naming what
// it left; a second SIGTERM cuts a long drain short; a start with the
// broker back delivers the rest, nothing lost or twice.
TEST_F(PipelineTest, ADrainHeldByTheBrokerDownEndsAtTheBoundAndAStartDeliversTheRest) {
  LoadMailbox(0);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string listen = "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port);
  const pid_t first = StartMsgx({listen, "MSGX_SHUTDOWN_DRAIN_TIMEOUT=5s", "MSGX_LOG_LEVEL=info"});
  ASSERT_TRUE(WaitSettled(MailboxRows(), seconds(120))) << Log();
  kafka_->SetBrokerDown();
  AddGenerated(300, 900'000);
  const std::int64_t rows = MailboxRows();
  for (int i = 0; i < 600 && OwnCount("SELECT count(*) FROM proc_state") < rows; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(OwnCount("SELECT count(*) FROM proc_state"), rows) << Log();
  ASSERT_GT(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'PENDING'"), 0);

  ASSERT_EQ(::kill(first, SIGTERM), 0);
  const auto [status, body] = ReadyzOnceItSays(*port, "draining", 50);
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("draining"), std::string::npos) << body;
  auto exited = WaitForExit(first, seconds(60));  // 5 s, and a step of at most a Kafka timeout
  ASSERT_TRUE(exited.ok()) << Log();
  EXPECT_EQ(exited->code, 0) << Log();
  EXPECT_TRUE(LogHas("the drain bound of 5000 ms passed")) << Log();
  EXPECT_TRUE(LogHas("dispatch KAFKA:msg undrained")) << Log();
  EXPECT_GT(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'PENDING'"), 0);

  // A long drain, cut short by a second signal.
  const pid_t second = StartMsgx({listen, "MSGX_SHUTDOWN_DRAIN_TIMEOUT=1h", "MSGX_LOG_LEVEL=info"});
  ASSERT_TRUE(GetSoon(*port, "/healthz", seconds(10))) << Log();
  ASSERT_EQ(ReadyzOnceItSays(*port, "dispatch KAFKA:msg stalled", 300).first, 503) << Log();
  ASSERT_EQ(::kill(second, SIGTERM), 0);
  EXPECT_EQ(ReadyzOnceItSays(*port, "draining", 50).first, 503);
  ASSERT_EQ(::kill(second, SIGTERM), 0);
  exited = WaitForExit(second, seconds(60));
  ASSERT_TRUE(exited.ok()) << Log();
  EXPECT_EQ(exited->code, 0) << Log();
  EXPECT_TRUE(LogHas("stopped at once during the drain")) << Log();

  kafka_->SetBrokerUp();
  const pid_t third = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(180))) << Log();
  StopMsgx(third);
  ExpectConsistent(rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'DEAD'"), 0);
  const auto want = OwnCount("SELECT count(*) FROM msg_event_state WHERE target = 'KAFKA:msg'");
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), topic_msg_, static_cast<size_t>(want),
                                   seconds(30));
  const std::set<std::string> ids = EventIdsInKeyOrder(got);
  EXPECT_EQ(static_cast<std::int64_t>(ids.size()), want);
}

}  // namespace
}  // namespace msgx
