#include "tools/bench_consumer.h"

#include <cstdlib>
#include <set>
#include <utility>

namespace msgx::app {
namespace {

std::string Header(rd_kafka_headers_t* hdrs, const char* name) {
  const void* val = nullptr;
  std::size_t size = 0;
  if (hdrs == nullptr ||
      rd_kafka_header_get_last(hdrs, name, &val, &size) != RD_KAFKA_RESP_ERR_NO_ERROR ||
      val == nullptr) {
    return "";
  }
  return std::string(static_cast<const char*>(val), size);
}

}  // namespace

BenchConsumer::BenchConsumer(std::string bootstrap, std::vector<std::string> topics)
    : bootstrap_(std::move(bootstrap)), topics_(std::move(topics)) {}

BenchConsumer::~BenchConsumer() {
  Stop();
  if (rk_ != nullptr) {
    rd_kafka_consumer_close(rk_);
    rd_kafka_destroy(rk_);
  }
}

Status BenchConsumer::Start() {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // fetch.wait.max.ms 1: the mock broker holds a fetch that finds nothing
  // for its whole wait, even when records commit meanwhile (a real broker
  // answers it as soon as they do). So the wait is added to a record's
  // measured latency, up to its length: 10 ms put about 4 ms on the 1k
  // step's p50 and 8 ms on its p99
  // (docs/performance.md#the-bench-consumers-fetch-wait-2026-12-06-220x-utc).
  const std::pair<const char*, const char*> settings[] = {
      {"bootstrap.servers", bootstrap_.c_str()}, {"group.id", "msgx-bench"},
      {"isolation.level", "read_committed"},     {"enable.auto.commit", "false"},
      {"enable.partition.eof", "true"},          {"fetch.wait.max.ms", "1"},
      {"fetch.error.backoff.ms", "10"},
  };
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k, v, err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      return Status::Config(std::string("bench consumer ") + k + ": " + err);
    }
  }
  rk_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (rk_ == nullptr) return Status::Infra(std::string("bench consumer: ") + err);
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(8);
  for (const std::string& topic : topics_) {
    rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk_, 0, rkt, &md, 10'000);
    rd_kafka_topic_destroy(rkt);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR || md->topic_cnt != 1 || md->topics[0].partition_cnt < 1) {
      if (md != nullptr) rd_kafka_metadata_destroy(md);
      rd_kafka_topic_partition_list_destroy(parts);
      return Status::Infra("bench consumer: no metadata for topic " + topic + " at " + bootstrap_ +
                           ": " + rd_kafka_err2str(e));
    }
    for (int p = 0; p < md->topics[0].partition_cnt; ++p) {
      rd_kafka_topic_partition_list_add(parts, topic.c_str(), md->topics[0].partitions[p].id)
          ->offset = RD_KAFKA_OFFSET_END;
    }
    rd_kafka_metadata_destroy(md);
  }
  const int want = parts->cnt;
  rd_kafka_resp_err_t e = rd_kafka_assign(rk_, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    return Status::Infra(std::string("bench consumer assign: ") + rd_kafka_err2str(e));
  }
  std::set<std::pair<std::string, std::int32_t>> at_eof;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (static_cast<int>(at_eof.size()) < want && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      at_eof.emplace(rd_kafka_topic_name(m->rkt), m->partition);
    }
    rd_kafka_message_destroy(m);  // anything before EOF predates the bench
  }
  if (static_cast<int>(at_eof.size()) < want) {
    return Status::Infra("bench consumer: the topics did not reach their end within 30 s");
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void BenchConsumer::Stop() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
}

std::vector<Receipt> BenchConsumer::Take() {
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(pending_, {});
}

void BenchConsumer::Loop() {
  while (!stop_.load()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 20);
    if (m == nullptr) continue;
    const auto now = std::chrono::steady_clock::now();
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      Receipt r;
      r.at = now;
      const std::string topic = rd_kafka_topic_name(m->rkt);
      r.topic = topic == topics_[0]   ? BenchTopic::kMsg
                : topic == topics_[1] ? BenchTopic::kSchd
                                      : BenchTopic::kRef;
      rd_kafka_headers_t* hdrs = nullptr;
      if (rd_kafka_message_headers(m, &hdrs) != RD_KAFKA_RESP_ERR_NO_ERROR) hdrs = nullptr;
      r.event_id = Header(hdrs, "msgx-event-id");
      r.mailbox_id = std::strtoll(Header(hdrs, "msgx-mailbox-id").c_str(), nullptr, 10);
      if (m->key != nullptr) r.key.assign(static_cast<const char*>(m->key), m->key_len);
      std::lock_guard<std::mutex> lock(mu_);
      pending_.push_back(std::move(r));
    } else if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      ++errors_;
    }
    rd_kafka_message_destroy(m);
  }
}

}  // namespace msgx::app
