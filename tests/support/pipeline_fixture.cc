#include "tests/support/pipeline_fixture.h"

#include <signal.h>

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <pqxx/pqxx>

#include "base/clock.h"
#include "base/subprocess.h"
#include "state/state_store.h"
#include "stream/capture/mailbox_schema.h"
#include "tests/support/fixtures.h"
#include "tests/support/temp_dirs.h"
#include "tools/corpus_loader.h"

namespace msgx::testing {

using std::chrono::milliseconds;
using std::chrono::seconds;

MariaDbServer* PipelineTest::maria_ = nullptr;
PgServer* PipelineTest::pg_ = nullptr;
PgServer* PipelineTest::own_pg_ = nullptr;
RedisServer* PipelineTest::redis_ = nullptr;
KafkaMock* PipelineTest::kafka_ = nullptr;
int PipelineTest::n_ = 0;

void PipelineTest::SetUpTestSuite() {
  pg_ = PgServer::Start().release();
  pg_->CreateDatabase("aodb");
  pg_->Psql("aodb", kLocalMailboxDdl);
  own_pg_ = PgServer::Start().release();
  redis_ = RedisServer::Start().release();
  kafka_ = KafkaMock::Start().release();
}

void PipelineTest::TearDownTestSuite() {
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

void PipelineTest::SetUp() {
  own_db_ = "msgx_p" + std::to_string(++n_);
  // Topics of this test only: event keys restart at 0 with every log.
  topic_msg_ = "events." + own_db_;
  topic_schd_ = "schedule." + own_db_;
  topic_ref_ = "reference." + own_db_;
  for (const std::string& t : {topic_msg_, topic_schd_, topic_ref_}) kafka_->CreateTopic(t);
  own_url_ = CreateMigratedDatabase(own_pg_, own_db_);
  pg_->Psql("aodb", "TRUNCATE cminmsgs");
  if (maria_mailbox_) {
    if (maria_ == nullptr) maria_ = MariaDbServer::Start().release();
    maria_->Sql("mysql", "DROP DATABASE IF EXISTS aodb; CREATE DATABASE aodb");
    maria_->Sql("aodb", kLocalMariaDbMailboxDdl);
  }
  auto dir = MakeOwnedTempDir("pipeline", std::nullopt);
  ASSERT_TRUE(dir.ok());
  state_dir_ = *dir;
  msgx_log_ = state_dir_ + "/msgx.log";
  redis_->Cli({"FLUSHALL"});
}

std::string PipelineTest::MailboxUrl() const {
  return maria_mailbox_ ? maria_->Url("aodb") : pg_->Url("aodb");
}

std::string PipelineTest::MailboxSql(const std::string& sql) const {
  return maria_mailbox_ ? maria_->Sql("aodb", sql) : pg_->Psql("aodb", sql);
}

std::vector<std::string> PipelineTest::Env() const {
  return {"MSGX_MAILBOX_URL=" + MailboxUrl(), "MSGX_POSTGRES_URL=" + own_url_,
          "MSGX_REDIS_URL=" + redis_->Url(), "MSGX_KAFKA_BOOTSTRAP_SERVERS=" + kafka_->Bootstrap(),
          "MSGX_STATE_DIR=" + state_dir_, "MSGX_KAFKA_TOPICS_MSG=" + topic_msg_,
          "MSGX_KAFKA_TOPICS_SCHD=" + topic_schd_, "MSGX_KAFKA_TOPICS_REF=" + topic_ref_,
          "MSGX_HTTP_LISTEN=127.0.0.1:0", "MSGX_PIPELINE_POLL_INTERVAL=50ms",
          // No scheduled sweep unless a test asks (some count records).
          "MSGX_HISTORY_SWEEP_AT=off", "MSGX_SCHD_FLUSH_PERIOD=200ms", "MSGX_LOG_LEVEL=warn"};
}

std::vector<std::string> PipelineTest::EnvWith(const std::vector<std::string>& more) const {
  return testing::EnvWith(Env(), more);
}

pid_t PipelineTest::StartMsgx(const std::vector<std::string>& more_env) {
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

void PipelineTest::StopMsgx(pid_t pid) { ASSERT_TRUE(StopProcess(pid, SIGTERM, seconds(30)).ok()); }

std::int64_t PipelineTest::LoadMailbox(int generated) {
  auto plan = app::LoadCorpus(MSGX_CORPUS_DIR, MailboxUrl(), "cminmsgs", "Asia/Shanghai",
                              *SystemClock::Default());
  EXPECT_TRUE(plan.ok()) << plan.status().ToString();
  if (generated > 0) AddGenerated(generated, 500'000);
  return MailboxRows();
}

void PipelineTest::AddGenerated(int n, int seqn_base) {
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

bool PipelineTest::WaitSettled(std::int64_t rows, milliseconds timeout) {
  return testing::WaitSettled(own_url_, *redis_, rows, timeout);
}

bool PipelineTest::WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + seconds(60);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(200));
  }
  return done();
}

std::string PipelineTest::InsertUnsupportedRow() {
  const std::string inserted = pg_->Psql(
      "aodb",
      "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) "
      "SELECT replace(cminmsgs_clob_msg, '<TYPE>FLOP</TYPE>', '<TYPE>ZZZZ</TYPE>'), now(), "
      "'VALID' FROM cminmsgs WHERE cminmsgs_subsystem_subtype = 'STND' LIMIT 1 "
      "RETURNING cminmsgs_id");
  return inserted.substr(0, inserted.find_first_of(" \n"));
}

PipelineCheckInput PipelineTest::CheckInput() const {
  PipelineCheckInput in;
  in.state_dir = state_dir_;
  in.mailbox_url = MailboxUrl();
  in.own_url = own_url_;
  in.redis_url = redis_->Url();
  return in;
}

void PipelineTest::ExpectConsistent(std::int64_t rows) {
  ExpectPipelineConsistent(CheckInput(), rows);
}

std::map<std::string, std::int64_t> PipelineTest::EventsByTarget() {
  std::map<std::string, std::int64_t> out;
  pqxx::connection c(own_url_);
  pqxx::nontransaction nt(c);
  for (const auto& row : nt.exec("SELECT target, count(*) FROM msg_event_state GROUP BY 1")) {
    out[row[0].as<std::string>()] = row[1].as<std::int64_t>();
  }
  return out;
}

std::int64_t PipelineTest::MailboxRows() {
  return std::strtoll(MailboxSql("SELECT count(*) FROM cminmsgs").c_str(), nullptr, 10);
}

std::int64_t PipelineTest::OwnCount(const std::string& sql) {
  pqxx::connection c(own_url_);
  pqxx::nontransaction nt(c);
  return nt.exec1(sql)[0].as<std::int64_t>();
}

std::int64_t PipelineTest::MirrorOffset() {
  const std::string out = redis_->Cli({"HGET", "msgx:mirror", "offset"});
  if (out.empty() || !std::isdigit(static_cast<unsigned char>(out[0]))) return -1;
  return std::stoll(out);
}

std::int64_t PipelineTest::FoldedOffset() {
  auto store = StateStore::Open(state_dir_ + "/state", {false, true});
  if (!store.ok()) return -1;
  auto meta = (*store)->ReadMeta();
  return meta.ok() ? meta->applied_offset : -1;
}

int PipelineTest::OutageSeconds() {
  const char* secs = std::getenv("MSGX_TEST_OUTAGE_SECONDS");
  return secs ? std::atoi(secs) : 8;
}

std::set<std::string> PipelineTest::EventIdsInKeyOrder(
    const std::vector<ConsumedMessage>& messages) {
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

void PipelineTest::Consumers::Finish() {
  settled = true;
  for (auto& t : threads) t.join();
  threads.clear();
}

void PipelineTest::StartConsumers(Consumers* c, milliseconds limit) {
  for (const std::string& topic : {topic_msg_, topic_ref_, topic_schd_}) c->consumed[topic];
  c->threads.reserve(c->consumed.size());
  int k = 0;
  for (auto& [topic, out] : c->consumed) {
    c->threads.emplace_back([this, c, limit, t = topic, o = &out, r = &c->ready[k++]] {
      *o = ConsumeTopicUntil(
          kafka_->Bootstrap(), t, SIZE_MAX, limit, [c] { return c->settled.load(); }, r);
    });
  }
  for (auto& r : c->ready) {
    for (int i = 0; i < 300 && !r; ++i) std::this_thread::sleep_for(milliseconds(100));
    ASSERT_TRUE(r) << "consumer not ready";
  }
}

bool PipelineTest::QueueReplay(const std::string& msg_id) {
  SpawnOptions replay;
  replay.argv = {MSGX_BINARY, "replay", "--msg", msg_id};
  replay.extra_env = Env();
  auto queued = RunCommand(replay, "", seconds(60));
  if (!queued.ok()) {
    ADD_FAILURE() << "msgx replay: " << queued.status().ToString();
    return false;
  }
  if (queued->status.code != 0) {
    ADD_FAILURE() << "msgx replay exited " << queued->status.code << ": " << queued->out
                  << queued->err;
    return false;
  }
  return true;
}

bool PipelineTest::LogHas(const std::string& needle) const {
  auto log = ReadFileToString(msgx_log_);
  return log.ok() && log->find(needle) != std::string::npos;
}

std::string PipelineTest::Log() const {
  SpawnOptions o;
  o.argv = {"sh", "-c", "grep -v '\"component\":\"kafka\"' '" + msgx_log_ + "' | tail -n 40"};
  auto out = RunCommand(o, "", seconds(5));
  return out.ok() ? out->out : "";
}

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

std::optional<double> MetricSample(int port, const std::string& series) {
  auto metrics = GetSoon(port, "/metrics", seconds(5));
  if (!metrics) return std::nullopt;
  // After a newline: the sample's line, not its # HELP or # TYPE.
  const std::string line = "\n" + series + " ";
  const auto at = metrics->body.find(line);
  if (at == std::string::npos) return std::nullopt;
  return std::stod(metrics->body.substr(at + line.size()));
}

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

}  // namespace msgx::testing
