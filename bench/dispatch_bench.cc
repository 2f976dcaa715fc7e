// The dispatcher alone, with and without the progress record of exactly-once
// delivery (docs/performance.md#the-progress-record-of-exactly-once-delivery-issue-20).
//
// Each run loads MSGX_BENCH_DISPATCH_EVENTS (default 200,000) KAFKA:msg
// events PENDING into msg_event of the PostgreSQL in MSGX_BENCH_POSTGRES_URL
// (migrated by `msgx migrate`; bench/dispatch_alone.sh prepares it): one
// event per source message, each with its proc_state row (which the
// dispatcher no longer reads: since V7 the event carries its source's
// received_at), a payload of about 1.5 kB shaped like a flight event, 2,000
// flights as Kafka keys. Then one Dispatcher with the service's options
// (DispatcherOptions::ForTarget: claim 2,000, fenced by a leadership epoch,
// the producer settings of a default configuration) steps until every
// event is SENT, against a librdkafka mock cluster started in this process
// for the run. The mirror gate is a constant (no Redis): only the
// dispatcher's steps are timed (manual time), from its first Step, which
// reads the progress, to the one that finds nothing left. items/s = events/s;
// the counters publish_s and reconcile_s are the seconds spent in the Kafka
// transactions and in the progress read (Prepare + ReadProgress);
// pg_ms_first and pg_ms_last are the mean milliseconds per batch outside
// the Kafka transaction (the head query, the SENT update, the fence: almost
// all PostgreSQL) over the first and the last tenth of the batches, to see
// whether a batch gets slower as more events are SENT. head_ms_early and
// head_ms_late (head_buffers_…) are the head query's own time (buffers)
// under EXPLAIN (ANALYZE, BUFFERS) after 5% and after 65% of the events
// were SENT (130,000 of 200,000), on a second connection, not timed; the
// label names the index each read msg_event by.
//
//   BM_DispatchAlone/progress:1  with the progress record (the service)
//   BM_DispatchAlone/progress:0  without: progress_topic empty, which the
//                                configuration cannot set (bench only)
//
// One run per invocation; bench/dispatch_alone.sh interleaves them.
#include <benchmark/benchmark.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config.h"
#include "stream/dispatch/dispatcher.h"
#include "stream/dispatch/kafka_publisher.h"
#include "stream/pg/pg_leadership.h"
#include "stream/pg/pg_session.h"

namespace {

using namespace msgx;  // NOLINT

constexpr const char* kLogUuid = "0b5e0000-bench-4d15-9a7c-000000000020";
constexpr int kFlights = 2000;

// A flight event's JSON of about 1.5 kB (the shape of
// docs/dispatch.md#event-payloads); @K, @F and @V are replaced per row.
std::string PayloadTemplate() {
  std::string flight =
      R"("flight":{"ADID":"D","ACFT":"A320","ALC2":"XY","ALC3":"XYZ","AURN":"@F",)"
      R"("CTOT":"2026-12-02T10:45:00+01:00","EOBT":"2026-12-02T10:30:00+01:00",)"
      R"("ETDI":"2026-12-02T10:35:00+01:00","FLNO":"XY 1234","FLTI":"I","GATE":"B27",)"
      R"("GTD1":"B27","PSTD":"C14","REGN":"D-ABCD","RTYP":"S","STEV":"0","STND":"C14",)"
      R"("STOD":"2026-12-02T10:30:00+01:00","STYP":"J","TTYP":"01","VIA3":"MUC",)"
      R"("VIAL":"MUC FRA","BELT":"","CKIF":"101","CKIT":"112","DES3":"LHR","DES4":"EGLL",)"
      R"("ORG3":"VIE","ORG4":"LOWW","PAXT":"156","REMP":"BOARDING","TGD1":"2")";
  std::string changes =
      R"("changes":{"CTOT":{"after":"2026-12-02T10:45:00+01:00","before":null},)"
      R"("GATE":{"after":"B27","before":"B25"},"STND":{"after":"C14","before":"C12"}})";
  std::string s = R"({)" + changes + R"(,"event_key":"@K","flid":"@F",)" + flight +
                  R"(,"op":"UPSERT","source":{"DTTM":"2026-12-02T09:12:33+01:00",)"
                  R"("SEQN":"@V","STYP":"STND","TYPE":"FLOP","id":@V},"version":@V)";
  // Padding to the size of a real flight (its remaining lists and times).
  s += R"(,"x":")" + std::string(1500 - s.size() - 4, 'p') + R"("})";
  return s;
}

// Empties the outbox and loads `n` PENDING events with their sources.
void Load(const std::string& url, int n) {
  pqxx::connection c(url);
  {
    pqxx::work tx(c);
    tx.exec("TRUNCATE msg_event, outbox_delivery, proc_state");
    tx.exec_params(
        "INSERT INTO proc_state (msg_id, state, updated_at, received_at, enqueued_at, "
        "log_offset) SELECT i, 'SUCCEEDED', now(), now(), now(), i "
        "FROM generate_series(1, $1) AS i",
        n);
    tx.exec_params(
        "INSERT INTO msg_event (event_key, target, partition_key, event_type, state_version, "
        "payload_json, created_at, source_msg_id, received_at) "
        "SELECT i || ':0:0', 'KAFKA:msg', 'F' || (i % $2), 'UPSERT', i, "
        "replace(replace(replace($3, '@K', i || ':0:0'), '@F', 'F' || (i % $2)), '@V', i::text), "
        "now(), i, now() FROM generate_series(1, $1) AS i ORDER BY i",
        n, kFlights, PayloadTemplate());
    tx.commit();
  }
  pqxx::nontransaction nt(c);
  nt.exec("VACUUM ANALYZE msg_event");
  nt.exec("VACUUM ANALYZE proc_state");
}

// A librdkafka mock cluster for one run, with the configuration's topics.
class MockCluster {
 public:
  explicit MockCluster(const Config& config) {
    std::array<char, 512> err{};
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "3", err.data(), err.size());
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err.data(), err.size());
    if (rk_ == nullptr) return;
    cluster_ = rd_kafka_mock_cluster_new(rk_, 1);
    if (cluster_ == nullptr) return;
    for (const std::string& t : {config.topic_msg, config.topic_progress})
      rd_kafka_mock_topic_create(cluster_, t.c_str(), 1, 1);
  }
  ~MockCluster() {
    if (cluster_ != nullptr) rd_kafka_mock_cluster_destroy(cluster_);
    if (rk_ != nullptr) rd_kafka_destroy(rk_);
  }
  MockCluster(const MockCluster&) = delete;
  MockCluster& operator=(const MockCluster&) = delete;
  std::string Bootstrap() const {
    return cluster_ != nullptr ? rd_kafka_mock_cluster_bootstraps(cluster_) : "";
  }

 private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* cluster_ = nullptr;
};

// Seconds since `start`.
double Since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Wraps the real publisher and sums the wall time of its calls: where the
// dispatcher's time goes (the rest is PostgreSQL and the dispatcher itself).
class TimedPublisher final : public Publisher {
 public:
  explicit TimedPublisher(Publisher* real) : real_(real) {}
  PublishResult Publish(std::span<const OutgoingMessage> batch) override {
    const auto start = std::chrono::steady_clock::now();
    PublishResult r = real_->Publish(batch);
    publish_s += Since(start);
    ++transactions;
    return r;
  }
  Status Prepare() override {
    const auto start = std::chrono::steady_clock::now();
    Status s = real_->Prepare();
    reconcile_s += Since(start);
    return s;
  }
  Result<std::optional<std::string>> ReadProgress(const std::string& topic,
                                                  const std::string& key) override {
    const auto start = std::chrono::steady_clock::now();
    auto r = real_->ReadProgress(topic, key);
    reconcile_s += Since(start);
    return r;
  }
  double publish_s = 0;    // in Publish: the Kafka transactions
  double reconcile_s = 0;  // in Prepare and ReadProgress
  std::int64_t transactions = 0;

 private:
  Publisher* real_;
};

// The head query (Dispatcher::HeadQuery) as the dispatcher runs it next,
// under EXPLAIN (ANALYZE, BUFFERS) on a connection of its own: its time,
// the buffers it touched and the index it read msg_event by.
struct HeadSample {
  double ms = 0;
  double buffers = 0;
  std::string index;
};

// The number after `key` in `text` (from `from`), or 0.
double NumberAfter(const std::string& text, const std::string& key, size_t from = 0) {
  const size_t at = text.find(key, from);
  return at == std::string::npos ? 0 : std::atof(text.c_str() + at + key.size());
}

HeadSample SampleHead(pqxx::connection& c, const DispatcherOptions& options) {
  pqxx::nontransaction nt(c);
  std::string plan;
  for (const auto& row : nt.exec_params(
           "EXPLAIN (ANALYZE, BUFFERS) " + Dispatcher::HeadQuery(options.target, false, false),
           options.head_limit(), 0, "{}")) {
    plan += row[0].as<std::string>() + "\n";
  }
  HeadSample h;
  h.ms = NumberAfter(plan, "Execution Time: ");
  // The first Buffers line is the top node's: the whole query's.
  const size_t buffers = plan.find("Buffers: shared");
  if (buffers != std::string::npos) {
    const std::string line = plan.substr(buffers, plan.find('\n', buffers) - buffers);
    h.buffers = NumberAfter(line, "hit=") + NumberAfter(line, "read=");
  }
  const size_t scan = plan.find(" on msg_event");
  const size_t using_at = plan.rfind("using ", scan);
  h.index = scan == std::string::npos || using_at == std::string::npos
                ? "(no index)"
                : plan.substr(using_at + 6, scan - using_at - 6);
  return h;
}

// The mean of `xs`, 0 when empty.
double Mean(std::span<const double> xs) {
  double sum = 0;
  for (double x : xs) sum += x;
  return xs.empty() ? 0 : sum / static_cast<double>(xs.size());
}

void BM_DispatchAlone(benchmark::State& state) {
  const char* url = std::getenv("MSGX_BENCH_POSTGRES_URL");
  if (url == nullptr || *url == '\0') {
    state.SkipWithError("MSGX_BENCH_POSTGRES_URL is not set (bench/dispatch_alone.sh)");
    return;
  }
  const char* n_env = std::getenv("MSGX_BENCH_DISPATCH_EVENTS");
  const int n = n_env != nullptr && *n_env != '\0' ? std::atoi(n_env) : 200'000;
  const bool progress = state.range(0) != 0;
  std::int64_t steps = 0;
  double publish_s = 0;
  double reconcile_s = 0;
  std::int64_t transactions = 0;
  double pg_ms_first = 0;
  double pg_ms_last = 0;
  double head_ms_early = 0;
  double head_ms_late = 0;
  double head_buffers_early = 0;
  double head_buffers_late = 0;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    Load(url, n);
    Config config;
    MockCluster kafka(config);
    config.kafka_bootstrap_servers = kafka.Bootstrap();
    PgLeadership leadership(url, kLogUuid);
    auto lead = leadership.TryAcquire();
    auto publisher = KafkaPublisher::Create(
        KafkaPublisherOptions::FromConfig(config, std::string("msgx-") + kLogUuid + "-msg"));
    if (config.kafka_bootstrap_servers.empty() || !lead.ok() || !lead->leader || !publisher.ok()) {
      state.SkipWithError(!publisher.ok() ? publisher.status().ToString().c_str()
                                          : "no mock cluster, or not leader");
      break;
    }
    DispatcherOptions options = DispatcherOptions::ForTarget(config, "KAFKA:msg", kLogUuid);
    if (!progress) options.progress_topic.clear();
    // The same-run baseline of the overlapped SENT update
    // (docs/performance.md#the-sent-update-overlaps-the-next-batch).
    if (std::getenv("MSGX_BENCH_DISPATCH_SERIAL") != nullptr) options.overlap_sent_update = false;
    PgSession pg(url);
    TimedPublisher timed(publisher->get());
    Dispatcher dispatcher(
        &pg, &timed, [] { return Result<std::int64_t>(std::numeric_limits<std::int64_t>::max()); },
        SystemClock::Default(), options);
    dispatcher.set_epoch(lead->epoch);
    // The head query sampled twice, once early and once late in the run
    // (5% and 65% of the events SENT), outside the timed steps.
    pqxx::connection probe(url);
    const std::int64_t sample_at[] = {n / 20, n * 13 / 20};
    std::vector<HeadSample> samples;
    double probe_s = 0;
    const auto start = std::chrono::steady_clock::now();
    std::vector<double> outside_kafka_ms;  // per step that sent: its time outside the publisher
    for (;;) {
      const auto step_start = std::chrono::steady_clock::now();
      const double kafka_before = timed.publish_s + timed.reconcile_s;
      auto step = dispatcher.Step();
      ++steps;
      if (step.ok() && step->kind == DispatchStep::Kind::kSent && step->sent > 0) {
        const double step_s = Since(step_start);
        const double kafka_s = timed.publish_s + timed.reconcile_s - kafka_before;
        outside_kafka_ms.push_back(1e3 * (step_s - kafka_s));
      }
      if (!step.ok() || step->kind == DispatchStep::Kind::kStalled ||
          step->kind == DispatchStep::Kind::kCharged) {
        state.SkipWithError(
            ("dispatch: " + (step.ok() ? step->error : step.status().ToString())).c_str());
        break;
      }
      if (step->kind == DispatchStep::Kind::kIdle) break;
      if (samples.size() < std::size(sample_at) &&
          dispatcher.sent_total() >= sample_at[samples.size()]) {
        const auto probe_start = std::chrono::steady_clock::now();
        samples.push_back(SampleHead(probe, options));
        probe_s += Since(probe_start);
      }
    }
    state.SetIterationTime(Since(start) - probe_s);
    if (samples.size() == std::size(sample_at)) {
      head_ms_early += samples[0].ms;
      head_ms_late += samples[1].ms;
      head_buffers_early += samples[0].buffers;
      head_buffers_late += samples[1].buffers;
      state.SetLabel(samples[0].index + "," + samples[1].index);
    }
    const size_t tenth = std::max<size_t>(1, outside_kafka_ms.size() / 10);
    if (outside_kafka_ms.size() >= 2 * tenth) {
      pg_ms_first += Mean(std::span(outside_kafka_ms).first(tenth));
      pg_ms_last += Mean(std::span(outside_kafka_ms).last(tenth));
    }
    publish_s += timed.publish_s;
    reconcile_s += timed.reconcile_s;
    transactions += timed.transactions;
    if (dispatcher.sent_total() != n) {
      state.SkipWithError(
          ("sent " + std::to_string(dispatcher.sent_total()) + " of " + std::to_string(n)).c_str());
    }
  }
  state.counters["events"] = static_cast<double>(n);
  state.counters["steps"] = static_cast<double>(steps);
  state.counters["transactions"] = static_cast<double>(transactions);
  state.counters["publish_s"] = publish_s;
  state.counters["reconcile_s"] = reconcile_s;
  state.counters["pg_ms_first"] = pg_ms_first;
  state.counters["pg_ms_last"] = pg_ms_last;
  state.counters["head_ms_early"] = head_ms_early;
  state.counters["head_ms_late"] = head_ms_late;
  state.counters["head_buffers_early"] = head_buffers_early;
  state.counters["head_buffers_late"] = head_buffers_late;
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_DispatchAlone)
    ->ArgName("progress")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->UseManualTime();

}  // namespace
