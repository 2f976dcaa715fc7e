// GET /metrics of a live `msgx run` (docs/operations.md#metrics-and-alerts):
// the quickstart corpus flows through real PostgreSQL, Redis and the Kafka
// mock, and the scraped exposition
//   - parses by the text format's rules (tests/support/exposition.h) and
//     passes `promtool check metrics` (Debian's prometheus package);
//   - carries the families of the operating surface with their labels, and
//     their figures agree with what PostgreSQL holds: one outcome per
//     mailbox row in msgx_messages_total, one latency observation per SENT
//     event and target, every lag and the outbox at 0 once settled, the
//     fold's batch sizes adding up to the records folded, the jobs' runs;
//   - has every metric that the shipped dashboard (docs/monitoring/
//     msgx-dashboard.json) and alert rules (docs/monitoring/msgx-alerts.yml)
//     query.
#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>
#include <signal.h>
#include <yaml-cpp/yaml.h>

#include <chrono>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <pqxx/pqxx>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/subprocess.h"
#include "stream/capture/mailbox_schema.h"
#include "tests/support/exposition.h"
#include "tests/support/fixtures.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dirs.h"
#include "tools/corpus_loader.h"

namespace msgx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Exposition;
using testing::ParseExposition;

const char* const kTargets[] = {"KAFKA:msg", "KAFKA:schd", "KAFKA:ref"};

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The metric names an expression of PromQL queries (msgx_* and process_*).
std::set<std::string> MetricNames(const std::string& expr) {
  static const std::regex kName(R"(\b((msgx|process)_[a-zA-Z0-9_]+))");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), kName);
       it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1].str());
  }
  return out;
}

// True when `name` is a family of `e`, or a sample name of one of its
// histograms (x_bucket, x_sum, x_count).
bool Exposed(const Exposition& e, const std::string& name) {
  if (e.Find(name) != nullptr) return true;
  for (const auto& [family, f] : e.families) {
    for (const auto& s : f.samples) {
      if (s.name == name) return true;
    }
  }
  return false;
}

double Value(const Exposition& e, const std::string& sample,
             const std::map<std::string, std::string>& labels = {}) {
  auto s = e.Samples(sample, labels);
  EXPECT_EQ(s.size(), 1U) << sample;
  return s.size() == 1 ? s[0].value : -1;
}

class MetricsExpositionTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pg_ = testing::PgServer::Start().release();
    pg_->CreateDatabase("aodb");
    pg_->Psql("aodb", kLocalMailboxDdl);
    redis_ = testing::RedisServer::Start().release();
    kafka_ = testing::KafkaMock::Start().release();
  }
  static void TearDownTestSuite() {
    delete kafka_;
    delete redis_;
    delete pg_;
    kafka_ = nullptr;
    redis_ = nullptr;
    pg_ = nullptr;
  }

  void SetUp() override {
    for (const char* t : {"events.metrics", "schedule.metrics", "reference.metrics"}) {
      kafka_->CreateTopic(t);
    }
    own_url_ = testing::CreateMigratedDatabase(pg_, "msgx_metrics");
    auto dir = testing::MakeOwnedTempDir("metrics", std::nullopt);
    ASSERT_TRUE(dir.ok());
    state_dir_ = *dir;
  }

  // The exposition once `done` holds for it (scraped every 250 ms, at most
  // `timeout`): the last one scraped either way, and its text in `text`.
  Exposition ScrapeUntil(int port, const std::function<bool(const Exposition&)>& done,
                         milliseconds timeout, std::string* text) {
    httplib::Client http("127.0.0.1", port);
    http.set_read_timeout(30, 0);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    Exposition last;
    for (;;) {
      auto res = http.Get("/metrics");
      if (res && res->status == 200) {
        EXPECT_EQ(res->get_header_value("Content-Type"), "text/plain; version=0.0.4");
        auto e = ParseExposition(res->body);
        EXPECT_TRUE(e.ok()) << e.status().ToString() << "\n" << res->body;
        if (!e.ok()) return last;
        last = std::move(*e);
        *text = res->body;
        if (done(last)) return last;
      }
      if (std::chrono::steady_clock::now() > deadline) return last;
      std::this_thread::sleep_for(milliseconds(250));
    }
  }

  std::int64_t OwnCount(const std::string& sql) {
    pqxx::connection c(own_url_);
    pqxx::nontransaction nt(c);
    return nt.exec1(sql)[0].as<std::int64_t>();
  }

  static testing::PgServer* pg_;
  static testing::RedisServer* redis_;
  static testing::KafkaMock* kafka_;
  std::string own_url_;
  std::string state_dir_;
};

testing::PgServer* MetricsExpositionTest::pg_ = nullptr;
testing::RedisServer* MetricsExpositionTest::redis_ = nullptr;
testing::KafkaMock* MetricsExpositionTest::kafka_ = nullptr;

TEST_F(MetricsExpositionTest, ALiveRunExposesEveryFamilyWithItsLabels) {
  auto plan = app::LoadCorpus(MSGX_CORPUS_DIR, pg_->Url("aodb"), "cminmsgs", "Asia/Shanghai",
                              *SystemClock::Default());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::int64_t rows = 0;
  {
    pqxx::connection c(pg_->Url("aodb"));
    pqxx::nontransaction nt(c);
    rows = nt.exec1("SELECT count(*) FROM cminmsgs")[0].as<std::int64_t>();
  }
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const double started = static_cast<double>(std::time(nullptr));
  SpawnOptions o;
  o.argv = {MSGX_BINARY, "run"};
  o.extra_env = {"MSGX_MAILBOX_URL=" + pg_->Url("aodb"),
                 "MSGX_POSTGRES_URL=" + own_url_,
                 "MSGX_REDIS_URL=" + redis_->Url(),
                 "MSGX_KAFKA_BOOTSTRAP_SERVERS=" + kafka_->Bootstrap(),
                 "MSGX_STATE_DIR=" + state_dir_,
                 "MSGX_KAFKA_TOPICS_MSG=events.metrics",
                 "MSGX_KAFKA_TOPICS_SCHD=schedule.metrics",
                 "MSGX_KAFKA_TOPICS_REF=reference.metrics",
                 "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port),
                 "MSGX_PIPELINE_POLL_INTERVAL=50ms",
                 "MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s",
                 "MSGX_SCHD_FLUSH_PERIOD=200ms",
                 "MSGX_STATE_BLOCK_CACHE_MB=24",
                 "MSGX_LOG_LEVEL=warn"};
  const std::string log = state_dir_ + "/msgx.log";
  o.stderr_path = log;
  o.parent_death_signal = SIGKILL;
  auto pid = Spawn(o);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(testing::WaitSettled(own_url_, *redis_, rows, seconds(120))) << ReadText(log);

  std::map<std::string, std::int64_t> sent;      // SENT events per target
  std::map<std::string, std::int64_t> received;  // of them, with a received_at
  {
    pqxx::connection c(own_url_);
    pqxx::nontransaction nt(c);
    for (const auto& r :
         nt.exec("SELECT e.target, count(*), count(p.received_at) FROM msg_event_state e LEFT JOIN "
                 "proc_state p ON p.msg_id = e.source_msg_id WHERE e.state = 'SENT' GROUP BY 1")) {
      sent[r[0].as<std::string>()] = r[1].as<std::int64_t>();
      received[r[0].as<std::string>()] = r[2].as<std::int64_t>();
    }
  }
  ASSERT_GT(sent["KAFKA:msg"], 0);

  // Settled: every lag and the outbox at 0, every event observed, the
  // processed mark has run over every row.
  std::vector<std::string> stages = {"capture", "fold", "mirror", "applier"};
  for (const char* t : kTargets) stages.push_back(std::string("dispatch ") + t);
  auto settled = [&](const Exposition& e) {
    for (const auto& s : stages) {
      auto lag = e.Samples("msgx_stage_lag_records", {{"stage", s}});
      if (lag.size() != 1 || lag[0].value != 0) return false;
    }
    for (const char* t : kTargets) {
      auto pending = e.Samples("msgx_outbox_pending", {{"target", t}});
      if (pending.size() != 1 || pending[0].value != 0) return false;
    }
    for (const auto& [target, n] : sent) {
      auto count = e.Samples("msgx_dispatch_latency_seconds_count", {{"target", target}});
      if (count.size() != 1 || count[0].value != static_cast<double>(n)) return false;
    }
    auto marked = e.Samples("msgx_job_rows_total", {{"job_name", "processed-mark"}});
    return marked.size() == 1 && marked[0].value == static_cast<double>(rows);
  };
  std::string text;
  const Exposition e = ScrapeUntil(*port, settled, seconds(30), &text);
  EXPECT_TRUE(settled(e)) << text;

  // Outcomes: one per mailbox row, by state and error class.
  const auto* messages = e.Find("msgx_messages_total");
  ASSERT_NE(messages, nullptr) << text;
  EXPECT_EQ(messages->type, "counter");
  double outcomes = 0;
  for (const auto& s : messages->samples) {
    EXPECT_EQ(s.labels.size(), 2U);
    EXPECT_TRUE(s.labels.contains("state") && s.labels.contains("error_class")) << text;
    outcomes += s.value;
  }
  EXPECT_EQ(outcomes, static_cast<double>(rows));
  EXPECT_EQ(outcomes, static_cast<double>(OwnCount("SELECT count(*) FROM proc_state")));
  EXPECT_FALSE(
      e.Samples("msgx_messages_total", {{"state", "SUCCEEDED"}, {"error_class", "none"}}).empty())
      << text;

  // Lag, outbox: the gauges, labelled.
  EXPECT_EQ(e.Find("msgx_stage_lag_records")->type, "gauge");
  for (const char* t : kTargets) {
    EXPECT_EQ(Value(e, "msgx_outbox_dead", {{"target", t}}), 0) << t;
  }

  // Latency histograms, per target: one observation per SENT event; the
  // end-to-end one for each whose mailbox row had a received time.
  for (const char* h : {"msgx_dispatch_latency_seconds", "msgx_e2e_latency_seconds"}) {
    ASSERT_NE(e.Find(h), nullptr) << h;
    EXPECT_EQ(e.Find(h)->type, "histogram");
  }
  for (const auto& [target, n] : sent) {
    EXPECT_EQ(Value(e, "msgx_dispatch_latency_seconds_count", {{"target", target}}),
              static_cast<double>(n));
    EXPECT_EQ(Value(e, "msgx_e2e_latency_seconds_count", {{"target", target}}),
              static_cast<double>(received[target]));
    EXPECT_EQ(
        Value(e, "msgx_dispatch_latency_seconds_bucket", {{"target", target}, {"le", "+Inf"}}),
        static_cast<double>(n));
    EXPECT_GT(Value(e, "msgx_dispatch_latency_seconds_sum", {{"target", target}}), 0);
    // The mailbox's received times are airport time (Asia/Shanghai, +08:00,
    // as the loader writes them), so the spans are real: above 0, and none
    // beyond the top bucket.
    EXPECT_GT(Value(e, "msgx_e2e_latency_seconds_sum", {{"target", target}}), 0) << target;
    EXPECT_EQ(Value(e, "msgx_e2e_latency_seconds_bucket", {{"target", target}, {"le", "300"}}),
              static_cast<double>(received[target]))
        << target;
  }
  EXPECT_GT(received["KAFKA:msg"], 0);

  // The fold's batches add up to the records it folded.
  ASSERT_NE(e.Find("msgx_fold_batch_records"), nullptr) << text;
  EXPECT_EQ(e.Find("msgx_fold_batch_records")->type, "histogram");
  EXPECT_EQ(Value(e, "msgx_fold_batch_records_sum"), Value(e, "msgx_fold_applied_offset") + 1);
  EXPECT_GE(Value(e, "msgx_fold_batch_records_count"), 1);

  // Per job: rows done, backlog, last and next run.
  for (const char* job :
       {"event-retention", "proc-state-archive", "proc-state-hst-retention", "processed-mark"}) {
    const std::map<std::string, std::string> l = {{"job_name", job}};
    EXPECT_EQ(e.Samples("msgx_job_rows_total", l).size(), 1U) << job;
    EXPECT_EQ(e.Samples("msgx_job_backlog", l).size(), 1U) << job;
    const double last = Value(e, "msgx_job_last_run_seconds", l);
    EXPECT_GE(last, started - 1) << job;
    EXPECT_GT(Value(e, "msgx_job_next_run_seconds", l), last) << job;
  }
  EXPECT_EQ(Value(e, "msgx_job_overdue", {{"job_name", "processed-mark"}}), 0);
  EXPECT_EQ(Value(e, "msgx_job_abandoned", {{"job_name", "processed-mark"}}), 0);

  // The process.
  EXPECT_EQ(e.Find("process_cpu_seconds_total")->type, "counter");
  EXPECT_GT(Value(e, "process_cpu_seconds_total"), 0);
  EXPECT_GT(Value(e, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(Value(e, "process_open_fds"), 3);
  EXPECT_GE(Value(e, "process_start_time_seconds"), started - 2);
  EXPECT_LE(Value(e, "process_start_time_seconds"), static_cast<double>(std::time(nullptr)) + 2);
  EXPECT_GT(Value(e, "msgx_state_dir_free_bytes"), 0);
  // The allocator's share of the resident size (base/heap_metrics.h).
  EXPECT_GT(Value(e, "msgx_malloc_in_use_bytes"), 1 << 20);
  EXPECT_GT(Value(e, "msgx_malloc_arena_bytes"), 0);
  EXPECT_GE(Value(e, "msgx_malloc_free_bytes"), 0);

  // The stores' memory (docs/operations.md#memory): the one block cache at
  // state.block-cache-mb, and each store's memtables holding what it wrote.
  EXPECT_EQ(Value(e, "msgx_store_block_cache_capacity_bytes"), 24.0 * (1 << 20));
  EXPECT_LE(Value(e, "msgx_store_block_cache_bytes"), 24.0 * (1 << 20));
  for (const char* store : {"log", "state"}) {
    EXPECT_GT(Value(e, "msgx_store_memtables_bytes", {{"store", store}}), 0) << store;
    EXPECT_EQ(e.Samples("msgx_store_table_readers_bytes", {{"store", store}}).size(), 1U) << store;
  }

  // Prometheus naming: counters end in _total, units are base units.
  for (const auto& [name, f] : e.families) {
    if (f.type == "counter") {
      EXPECT_TRUE(name.ends_with("_total")) << name;
    }
    for (const char* unit : {"micros", "millis", "_ms"}) {
      EXPECT_EQ(name.find(unit), std::string::npos) << name;
    }
  }

  // promtool agrees.
  SpawnOptions check;
  check.argv = {"promtool", "check", "metrics"};
  auto promtool = RunCommand(check, text, seconds(60));
  ASSERT_TRUE(promtool.ok()) << promtool.status().ToString();
  EXPECT_EQ(promtool->status.code, 0) << promtool->out << promtool->err;

  // Every metric the dashboard and the alert rules query is exposed.
  const std::string dir = std::string(MSGX_SOURCE_DIR) + "/docs/monitoring/";
  rapidjson::Document dash;
  dash.Parse(ReadText(dir + "msgx-dashboard.json").c_str());
  ASSERT_FALSE(dash.HasParseError());
  std::set<std::string> queried;
  ASSERT_TRUE(dash["panels"].IsArray());
  for (const auto& panel : dash["panels"].GetArray()) {
    for (const auto& target : panel["targets"].GetArray()) {
      for (const auto& n : MetricNames(target["expr"].GetString())) queried.insert(n);
    }
  }
  EXPECT_GE(queried.size(), 20U);
  const YAML::Node rules = YAML::LoadFile(dir + "msgx-alerts.yml");
  int alerts = 0;
  for (const auto& group : rules["groups"]) {
    for (const auto& rule : group["rules"]) {
      ++alerts;
      for (const auto& n : MetricNames(rule["expr"].as<std::string>())) queried.insert(n);
    }
  }
  EXPECT_GE(alerts, 10);
  for (const auto& name : queried) EXPECT_TRUE(Exposed(e, name)) << name << " is not exposed";

  ASSERT_TRUE(StopProcess(*pid, SIGTERM, seconds(30)).ok());
  EXPECT_EQ(ReadText(log).find("ALARM"), std::string::npos) << ReadText(log);
}

}  // namespace
}  // namespace msgx
