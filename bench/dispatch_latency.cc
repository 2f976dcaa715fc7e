// msgx_latency_bench: mailbox-to-Kafka latency and throughput of a running
// `msgx run` (docs/performance.md, "Mailbox to Kafka"; issue 6). Driven by
// bench/dispatch_latency.sh, which brings up the services and msgx.
//
// What it does, in order:
//   1. reads the FLOP STND/RENO/RUNW/REMC/TRML templates from the mailbox
//      (the rows `msgx dev load` put there); with --postgres-url, keeps only
//      those whose mailbox row produced a KAFKA:msg event;
//   2. starts a read_committed consumer on --topic at the END offset of every
//      partition and waits until each partition reports EOF, so nothing older
//      than this run is read;
//   3. inserts warmup + count rows into the mailbox: at --rate rows/s one
//      INSERT (one transaction) per row, paced against the schedule; with
//      --rate 0 (saturation) --batch rows per INSERT, back to back. Message k
//      is template (seqn % templates) with a fresh <SEQN> (above the largest
//      SEQN in the mailbox) and the changed field's value suffixed with
//      (seqn / templates) % 5, so each message changes its flight and yields
//      one KAFKA:msg event. The insert time of a row is steady_clock right
//      after its transaction's commit returned;
//   4. for every consumed message, reads the msgx-mailbox-id header; the
//      first receipt of an id is its "ack" as an outside client sees it;
//   5. prints offered rate, insert rate (all rows / (last commit - start)),
//      achieved throughput (measured events / (last measured receive -
//      first measured insert)), received counts, and p50/p90/p99/max of
//      receive - insert over the measured (non-warmup) rows; and the part
//      spent in Kafka: receive - the message's CreateTime (wall clock, ms).
// Exit status: 0 when every measured row was received before --timeout
// after the last insert, 1 when some were not (figures are still printed),
// 2 on a setup error.
//
// Both times come from this process's steady_clock, so no clock skew enters.
// It never asserts a timing. Single-purpose tool: not part of msgx_bench.
#include <librdkafka/rdkafka.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <pqxx/pqxx>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Options {
  std::string mailbox_url;
  std::string postgres_url;  // optional: filters templates to event-producing ones
  std::string bootstrap;
  std::string topic = "msgx.flight.events";
  double rate = 0;  // rows/s; 0 = saturation
  int count = 1000;
  int warmup = 100;
  int batch = 500;  // rows per INSERT at saturation
  int timeout_s = 60;
  // The zone of the mailbox's cminmsgs_date_received (a TIMESTAMP: local
  // wall-clock time), as msgx reads it (docs/capture.md#mailbox-time).
  std::string time_zone = "Asia/Shanghai";
  bool dry_run = false;  // print the first generated messages and stop
};

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v == nullptr ? "" : v;
}

// The mailbox rows to copy, and the first SEQN to use.
struct Templates {
  std::vector<std::string> xml;
  std::int64_t first_seqn = 0;
  std::int64_t max_mailbox_id = 0;
};

Templates LoadTemplates(const Options& o) {
  Templates t;
  std::set<std::int64_t> producing;
  if (!o.postgres_url.empty()) {
    pqxx::connection c(o.postgres_url);
    pqxx::nontransaction nt(c);
    for (const auto& r : nt.exec("SELECT DISTINCT source_msg_id FROM msg_event "
                                 "WHERE target = 'KAFKA:msg' AND source_msg_id IS NOT NULL")) {
      producing.insert(r[0].as<std::int64_t>());
    }
  }
  pqxx::connection c(o.mailbox_url);
  pqxx::nontransaction nt(c);
  for (const auto& r :
       nt.exec("SELECT cminmsgs_id, cminmsgs_clob_msg FROM cminmsgs "
               "WHERE cminmsgs_subsystem_type = 'FLOP' "
               "AND cminmsgs_subsystem_subtype IN ('STND','RENO','RUNW','REMC','TRML') "
               "ORDER BY cminmsgs_id")) {
    if (!o.postgres_url.empty() && producing.count(r[0].as<std::int64_t>()) == 0) continue;
    t.xml.push_back(r[1].as<std::string>());
  }
  auto row = nt.exec1(
      "SELECT coalesce(max(substring(cminmsgs_clob_msg from '<SEQN>([0-9]+)</SEQN>')::bigint), 0), "
      "coalesce(max(cminmsgs_id), 0) FROM cminmsgs");
  t.first_seqn = row[0].as<std::int64_t>() + 1;
  t.max_mailbox_id = row[1].as<std::int64_t>();
  return t;
}

// Template (seqn % n) with <SEQN>seqn</SEQN> and the changed field's value
// suffixed with (seqn / n) % 5 (first occurrence of each).
std::string MakeMessage(const Templates& t, std::int64_t seqn) {
  static const std::regex kSeqn("<SEQN>[0-9]+</SEQN>");
  static const std::regex kValue("<(STND|RENO|RUNW|REMC|TRML)>([^<]+)</");
  const auto n = static_cast<std::int64_t>(t.xml.size());
  std::string s = t.xml[static_cast<std::size_t>(seqn % n)];
  std::smatch m;
  if (std::regex_search(s, m, kSeqn)) {
    s.replace(static_cast<std::size_t>(m.position(0)), static_cast<std::size_t>(m.length(0)),
              "<SEQN>" + std::to_string(seqn) + "</SEQN>");
  }
  if (std::regex_search(s, m, kValue)) {
    // After the value, before its closing tag.
    s.insert(static_cast<std::size_t>(m.position(2) + m.length(2)), std::to_string((seqn / n) % 5));
  }
  return s;
}

// The consumer side: first receive time per mailbox id above `min_id`.
// Start() and Run() on one thread; Received() from any.
class AckConsumer {
 public:
  explicit AckConsumer(const Options& o, std::int64_t min_id) : o_(o), min_id_(min_id) {}
  ~AckConsumer() {
    if (rk_ != nullptr) {
      rd_kafka_consumer_close(rk_);
      rd_kafka_destroy(rk_);
    }
  }
  AckConsumer(const AckConsumer&) = delete;
  AckConsumer& operator=(const AckConsumer&) = delete;

  // Assigns every partition of the topic at its end and polls until each
  // reported EOF. False (with a message on stderr) on failure.
  bool Start() {
    char err[512];
    rd_kafka_conf_t* conf = rd_kafka_conf_new();
    const std::pair<const char*, const char*> settings[] = {
        {"bootstrap.servers", o_.bootstrap.c_str()},
        {"group.id", "msgx-latency-bench"},
        {"isolation.level", "read_committed"},
        {"enable.auto.commit", "false"},
        {"auto.offset.reset", "earliest"},
        {"enable.partition.eof", "true"},
        // 1 ms: the mock holds an empty fetch for all of it, adding it to
        // the latency measured (tools/bench_consumer.cc).
        {"fetch.wait.max.ms", "1"},
        {"fetch.error.backoff.ms", "10"},
    };
    for (const auto& [k, v] : settings) {
      if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
        std::fprintf(stderr, "kafka conf %s: %s\n", k, err);
        rd_kafka_conf_destroy(conf);
        return false;
      }
    }
    rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (rk_ == nullptr) {
      std::fprintf(stderr, "kafka consumer: %s\n", err);
      return false;
    }
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, o_.topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk_, 0, rkt, &md, 10'000);
    rd_kafka_topic_destroy(rkt);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR || md->topic_cnt != 1 || md->topics[0].partition_cnt < 1) {
      std::fprintf(stderr, "kafka metadata for %s: %s\n", o_.topic.c_str(), rd_kafka_err2str(e));
      if (md != nullptr) rd_kafka_metadata_destroy(md);
      return false;
    }
    partitions_ = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(partitions_);
    for (int p = 0; p < partitions_; ++p) {
      rd_kafka_topic_partition_list_add(parts, o_.topic.c_str(), md->topics[0].partitions[p].id)
          ->offset = RD_KAFKA_OFFSET_END;
    }
    rd_kafka_metadata_destroy(md);
    e = rd_kafka_assign(rk_, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      std::fprintf(stderr, "kafka assign: %s\n", rd_kafka_err2str(e));
      return false;
    }
    std::set<std::int32_t> at_eof;
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    while (static_cast<int>(at_eof.size()) < partitions_ && Clock::now() < deadline) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 100);
      if (m == nullptr) continue;
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) at_eof.insert(m->partition);
      rd_kafka_message_destroy(m);  // anything before EOF predates the run
    }
    if (static_cast<int>(at_eof.size()) < partitions_) {
      std::fprintf(stderr, "kafka: no EOF on %s within 30 s\n", o_.topic.c_str());
      return false;
    }
    return true;
  }

  // Polls until `want` distinct ids were seen, or `stop` says so.
  void Run(std::size_t want, const std::atomic<bool>& stop) {
    while (first_.size() < want && !stop.load()) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 50);
      if (m == nullptr) continue;
      const auto now = Clock::now();
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        ++messages_;
        Record(m, now);
      } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        ++errors_;
        if (errors_ <= 5) std::fprintf(stderr, "kafka: %s\n", rd_kafka_message_errstr(m));
      }
      rd_kafka_message_destroy(m);
    }
  }

  // Distinct ids seen so far; safe to call from any thread.
  std::size_t Received() const { return received_.load(); }
  // The first receive per id. REQUIRES: Run() has returned.
  const std::unordered_map<std::int64_t, Clock::time_point>& First() const { return first_; }
  // Per id: wall-clock receive - the message's CreateTime (the producer's
  // clock at produce(), before the transaction commits), in ms.
  // REQUIRES: Run() has returned.
  const std::unordered_map<std::int64_t, double>& KafkaMs() const { return kafka_ms_; }
  std::int64_t Messages() const { return messages_; }
  std::int64_t Duplicates() const { return duplicates_; }
  std::int64_t Errors() const { return errors_; }

 private:
  void Record(rd_kafka_message_t* m, Clock::time_point now) {
    rd_kafka_headers_t* hdrs = nullptr;
    if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    const void* val = nullptr;
    std::size_t size = 0;
    if (rd_kafka_header_get_last(hdrs, "msgx-mailbox-id", &val, &size) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      return;
    }
    const std::int64_t id =
        std::strtoll(std::string(static_cast<const char*>(val), size).c_str(), nullptr, 10);
    if (id <= min_id_) return;
    if (first_.emplace(id, now).second) {
      rd_kafka_timestamp_type_t type;
      const std::int64_t ts = rd_kafka_message_timestamp(m, &type);
      if (ts > 0 && type == RD_KAFKA_TIMESTAMP_CREATE_TIME) {
        const auto wall = std::chrono::duration_cast<std::chrono::milliseconds>(
                              std::chrono::system_clock::now().time_since_epoch())
                              .count();
        kafka_ms_.emplace(id, static_cast<double>(wall - ts));
      }
      received_.store(first_.size());
    } else {
      ++duplicates_;
    }
  }

  const Options& o_;
  const std::int64_t min_id_;
  rd_kafka_t* rk_ = nullptr;
  int partitions_ = 0;
  std::unordered_map<std::int64_t, Clock::time_point> first_;
  std::atomic<std::size_t> received_{0};
  std::unordered_map<std::int64_t, double> kafka_ms_;
  std::int64_t messages_ = 0;
  std::int64_t duplicates_ = 0;
  std::int64_t errors_ = 0;
};

// Inserts `msgs` and returns (mailbox id, insert time, index) per row.
struct Inserted {
  std::int64_t id;
  Clock::time_point at;
  int index;  // position in the run; < warmup means warmup
};

std::vector<Inserted> InsertAll(const Options& o, const std::vector<std::string>& msgs) {
  std::vector<Inserted> out;
  out.reserve(msgs.size());
  pqxx::connection c(o.mailbox_url);
  const std::string head =
      "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) VALUES ";
  if (o.rate > 0) {
    c.prepare("ins", head + "($1, now() AT TIME ZONE $2, 'VALID') RETURNING cminmsgs_id");
    const auto start = Clock::now();
    const auto period = std::chrono::duration<double>(1.0 / o.rate);
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      std::this_thread::sleep_until(
          start + std::chrono::duration_cast<Clock::duration>(period * static_cast<double>(i)));
      pqxx::work tx(c);
      const std::int64_t id = tx.exec_prepared1("ins", msgs[i], o.time_zone)[0].as<std::int64_t>();
      tx.commit();
      out.push_back({id, Clock::now(), static_cast<int>(i)});
    }
    return out;
  }
  for (std::size_t b = 0; b < msgs.size(); b += static_cast<std::size_t>(o.batch)) {
    const std::size_t e = std::min(msgs.size(), b + static_cast<std::size_t>(o.batch));
    pqxx::work tx(c);
    std::string sql = head;
    const std::string received = "now() AT TIME ZONE " + tx.quote(o.time_zone);
    for (std::size_t i = b; i < e; ++i) {
      if (i > b) sql += ',';
      sql += "(" + tx.quote(msgs[i]) + ", " + received + ", 'VALID')";
    }
    // One statement: ids follow the VALUES order (serial, single session).
    pqxx::result r = tx.exec(sql + " RETURNING cminmsgs_id");
    tx.commit();
    const auto at = Clock::now();
    std::vector<std::int64_t> ids;
    for (const auto& row : r) ids.push_back(row[0].as<std::int64_t>());
    std::sort(ids.begin(), ids.end());
    for (std::size_t k = 0; k < ids.size(); ++k) {
      out.push_back({ids[k], at, static_cast<int>(b + k)});
    }
  }
  return out;
}

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const auto k = static_cast<std::size_t>(std::lround(p * static_cast<double>(sorted.size() - 1)));
  return sorted[std::min(k, sorted.size() - 1)];
}

int Run(const Options& o) {
  Templates t;
  try {
    t = LoadTemplates(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mailbox: %s\n", e.what());
    return 2;
  }
  if (t.xml.empty()) {
    std::fprintf(stderr,
                 "no FLOP STND/RENO/RUNW/REMC/TRML template in the mailbox (msgx dev load?)\n");
    return 2;
  }
  const int total = o.warmup + o.count;
  if (t.first_seqn + total > 999'999) {
    std::fprintf(stderr, "SEQN would wrap (first %" PRId64 " + %d rows)\n", t.first_seqn, total);
    return 2;
  }
  std::vector<std::string> msgs;
  msgs.reserve(static_cast<std::size_t>(total));
  for (int i = 0; i < total; ++i) msgs.push_back(MakeMessage(t, t.first_seqn + i));
  if (o.dry_run) {
    for (std::size_t i = 0; i < std::min<std::size_t>(msgs.size(), 2 * t.xml.size()); ++i) {
      std::printf("%s\n", msgs[i].c_str());
    }
    return 0;
  }

  AckConsumer consumer(o, t.max_mailbox_id);
  if (!consumer.Start()) return 2;
  std::atomic<bool> stop{false};
  std::thread reader([&] { consumer.Run(static_cast<std::size_t>(total), stop); });

  std::vector<Inserted> ins;
  const auto insert_start = Clock::now();
  try {
    ins = InsertAll(o, msgs);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "insert: %s\n", e.what());
    stop = true;
    reader.join();
    return 2;
  }
  const auto inserted_at = Clock::now();
  // The reader stops by itself once all are in; the deadline caps the wait.
  while (consumer.Received() < static_cast<std::size_t>(total) &&
         Clock::now() < inserted_at + std::chrono::seconds(o.timeout_s)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop = true;
  reader.join();

  std::vector<double> lat;
  std::vector<double> kafka;
  Clock::time_point first_insert = Clock::time_point::max();
  Clock::time_point last_insert{};
  Clock::time_point last_recv{};
  int measured = 0;
  for (const Inserted& r : ins) {
    if (r.index < o.warmup) continue;
    ++measured;
    first_insert = std::min(first_insert, r.at);
    last_insert = std::max(last_insert, r.at);
    auto it = consumer.First().find(r.id);
    if (it == consumer.First().end()) continue;
    lat.push_back(Ms(it->second - r.at));
    if (auto k = consumer.KafkaMs().find(r.id); k != consumer.KafkaMs().end()) {
      kafka.push_back(k->second);
    }
    last_recv = std::max(last_recv, it->second);
  }
  std::sort(lat.begin(), lat.end());
  std::sort(kafka.begin(), kafka.end());
  const double insert_s = Ms(last_insert - insert_start) / 1000;
  const double span_s = lat.empty() ? 0 : Ms(last_recv - first_insert) / 1000;
  std::printf("offered rate     %s\n",
              o.rate > 0
                  ? (std::to_string(static_cast<long>(o.rate)) + " msg/s").c_str()
                  : ("saturation (" + std::to_string(o.batch) + " rows per INSERT)").c_str());
  std::printf("templates        %zu, SEQN %" PRId64 "..%" PRId64 "\n", t.xml.size(), t.first_seqn,
              t.first_seqn + total - 1);
  std::printf("rows             %d warmup + %d measured\n", o.warmup, measured);
  std::printf("insert rate      %.0f rows/s over %.2f s (all rows)\n",
              insert_s > 0 ? static_cast<double>(ins.size()) / insert_s : 0.0, insert_s);
  std::printf("received         %zu of %d measured (%" PRId64 " Kafka messages, %" PRId64
              " duplicate ids, %" PRId64 " consumer errors)\n",
              lat.size(), measured, consumer.Messages(), consumer.Duplicates(), consumer.Errors());
  std::printf(
      "throughput       %.0f events/s over %.2f s (first measured insert to last receive)\n",
      span_s > 0 ? static_cast<double>(lat.size()) / span_s : 0.0, span_s);
  std::printf("latency ms       p50 %.1f  p90 %.1f  p99 %.1f  max %.1f  (min %.1f)\n",
              Percentile(lat, 0.50), Percentile(lat, 0.90), Percentile(lat, 0.99),
              lat.empty() ? 0.0 : lat.back(), lat.empty() ? 0.0 : lat.front());
  std::printf(
      "produce->receive p50 %.0f  p99 %.0f ms (CreateTime to receive, wall clock, 1 ms steps)\n",
      Percentile(kafka, 0.50), Percentile(kafka, 0.99));
  return static_cast<int>(lat.size()) == measured ? 0 : 1;
}

int Main(int argc, char** argv) {
  Options o;
  o.mailbox_url = Env("MSGX_MAILBOX_URL");
  o.bootstrap = Env("MSGX_KAFKA_BOOTSTRAP_SERVERS");
  CLI::App app{"msgx_latency_bench: mailbox insert to Kafka receive, p50/p90/p99 and throughput"};
  app.add_option("--mailbox-url", o.mailbox_url, "mailbox PostgreSQL (default $MSGX_MAILBOX_URL)");
  app.add_option("--postgres-url", o.postgres_url,
                 "msgx's PostgreSQL: use only templates that produced a KAFKA:msg event");
  app.add_option("--bootstrap", o.bootstrap, "Kafka (default $MSGX_KAFKA_BOOTSTRAP_SERVERS)");
  app.add_option("--topic", o.topic, "topic of KAFKA:msg")->capture_default_str();
  app.add_option("--rate", o.rate, "offered rows/s; 0 = saturation")->capture_default_str();
  app.add_option("--count", o.count, "measured rows")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--warmup", o.warmup, "rows before, not measured")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--batch", o.batch, "rows per INSERT at saturation")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--timeout", o.timeout_s, "seconds to wait after the last insert")
      ->capture_default_str();
  app.add_option("--time-zone", o.time_zone,
                 "zone of the mailbox's date_received (mailbox.time-zone, else airport.timezone)")
      ->capture_default_str();
  app.add_flag("--dry-run", o.dry_run, "print the first generated messages, insert nothing");
  CLI11_PARSE(app, argc, argv);
  if (o.mailbox_url.empty() || o.bootstrap.empty()) {
    std::fprintf(stderr,
                 "--mailbox-url and --bootstrap are required (or eval \"$(msgx dev env)\")\n");
    return 2;
  }
  return Run(o);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {  // a library's, e.g. a lost connection
    std::fprintf(stderr, "msgx_latency_bench: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "msgx_latency_bench: unknown exception\n");
  }
  return 2;
}
