#include "tools/bench_baseline.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <pqxx/pqxx>

#include "codecs/sis_decoder.h"
#include "codecs/sis_json.h"
#include "tools/bench_ledger.h"
#include "tools/bench_mailbox.h"

namespace msgx::app {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct Producer {
  rd_kafka_t* rk = nullptr;
  ~Producer() {
    if (rk != nullptr) {
      rd_kafka_flush(rk, 10'000);
      rd_kafka_destroy(rk);
    }
  }
};

void OnDelivery(rd_kafka_t* /*rk*/, const rd_kafka_message_t* m, void* /*opaque*/) {
  *static_cast<rd_kafka_resp_err_t*>(m->_private) = m->err;
}

Status MakeProducer(const Config& config, Producer* p) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  const std::pair<const char*, const char*> settings[] = {
      {"bootstrap.servers", config.kafka_bootstrap_servers.c_str()},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"linger.ms", "0"},
  };
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::Config(std::string("baseline producer ") + k + ": " + err);
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (p->rk == nullptr) return Status::Infra(std::string("baseline producer: ") + err);
  return Status::Ok();
}

// Sends one record and waits for its acknowledgement.
Status SendAndWait(Producer& p, const std::string& topic, const std::string& key,
                   const std::string& value) {
  rd_kafka_resp_err_t result = RD_KAFKA_RESP_ERR__IN_PROGRESS;
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(p.rk, topic.c_str(), nullptr);
  if (rkt == nullptr) return Status::Infra("baseline topic " + topic);
  const int rc = rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY,
                                  const_cast<char*>(value.data()), value.size(), key.data(),
                                  key.size(), &result);
  rd_kafka_topic_destroy(rkt);
  if (rc != 0) {
    return Status::Infra(std::string("baseline produce: ") +
                         rd_kafka_err2str(rd_kafka_last_error()));
  }
  const auto deadline = SteadyClock::now() + std::chrono::seconds(30);
  while (result == RD_KAFKA_RESP_ERR__IN_PROGRESS && SteadyClock::now() < deadline) {
    rd_kafka_poll(p.rk, 1);
  }
  if (result != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Infra(std::string("baseline delivery: ") + rd_kafka_err2str(result));
  }
  return Status::Ok();
}

}  // namespace

Result<BaselineFigures> RunBaseline(const Config& config,
                                    const std::vector<std::int64_t>& mailbox_ids) {
  BaselineFigures f;
  Result<TimeZone> zone = TimeZone::Load(config.airport_timezone);
  if (!zone.ok()) return zone.status();
  const sis::SisDecoder decoder(*zone);
  Producer producer;
  if (Status s = MakeProducer(config, &producer); !s.ok()) return s;
  Result<std::unique_ptr<BenchMailbox>> mailbox = OpenBenchMailbox(config);
  if (!mailbox.ok()) return mailbox.status();
  std::vector<std::int64_t> ids = mailbox_ids;
  std::sort(ids.begin(), ids.end());
  std::vector<double> lat;
  try {
    pqxx::connection own(config.postgres_url);
    {
      pqxx::work tx(own);
      tx.exec0(
          "DROP TABLE IF EXISTS bench_baseline_event, bench_baseline_outcome;"
          "CREATE TABLE bench_baseline_outcome (msg_id bigint PRIMARY KEY, state text NOT NULL,"
          " error text, decided_at timestamptz NOT NULL DEFAULT now());"
          "CREATE TABLE bench_baseline_event (event_id bigserial PRIMARY KEY,"
          " msg_id bigint NOT NULL REFERENCES bench_baseline_outcome, payload text NOT NULL)");
      tx.commit();
    }
    own.prepare("outcome",
                "INSERT INTO bench_baseline_outcome (msg_id, state, error) VALUES ($1, $2, $3)");
    own.prepare("event", "INSERT INTO bench_baseline_event (msg_id, payload) VALUES ($1, $2)");
    const auto start = SteadyClock::now();
    for (std::int64_t id : ids) {
      const auto t0 = SteadyClock::now();
      Result<std::optional<std::string>> row = (*mailbox)->ReadMessage(id);
      if (!row.ok()) return row.status();
      if (!row->has_value()) continue;
      const std::string& xml = **row;
      Result<sis::DecodedMessage> msg = decoder.Decode(xml, sis::InputOrigin::kUnicodeText);
      std::string payload = msg.ok() ? sis::ToCanonicalJson(*msg) : sis::ErrorToJson(msg.status());
      {
        pqxx::work tx(own);
        tx.exec_prepared0("outcome", id, msg.ok() ? "SUCCEEDED" : "DEAD",
                          msg.ok() ? std::optional<std::string>()
                                   : std::optional<std::string>(msg.status().message()));
        tx.exec_prepared0("event", id, payload);
        tx.commit();
      }
      if (!msg.ok()) ++f.failed;
      if (Status s = SendAndWait(producer, config.topic_msg, std::to_string(id), payload);
          !s.ok()) {
        return s;
      }
      if (Status s = (*mailbox)->MarkProcessed(id); !s.ok()) return s;
      lat.push_back(std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count());
      ++f.messages;
    }
    f.seconds = std::chrono::duration<double>(SteadyClock::now() - start).count();
    pqxx::work tx(own);
    tx.exec0("DROP TABLE IF EXISTS bench_baseline_event, bench_baseline_outcome");
    tx.commit();
  } catch (const std::exception& e) {
    return Status::Infra(std::string("baseline: ") + e.what());
  }
  std::sort(lat.begin(), lat.end());
  f.msg_per_s = f.seconds > 0 ? static_cast<double>(f.messages) / f.seconds : 0;
  f.p50_ms = Percentile(lat, 0.5);
  f.p95_ms = Percentile(lat, 0.95);
  f.p99_ms = Percentile(lat, 0.99);
  f.max_ms = lat.empty() ? 0 : lat.back();
  return f;
}

}  // namespace msgx::app
