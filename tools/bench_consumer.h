// BenchConsumer: the read_committed Kafka consumer `msgx bench` judges
// delivery by (docs/performance.md#msgx-bench). It runs on its own thread
// for the whole ramp, because librdkafka's mock broker keeps only the tail
// of a partition: what is not read while a step runs is gone afterwards.
//
// Start() assigns every partition of the three topics (kafka.topics.msg,
// .schd, .ref) at their END offsets and waits until each reports EOF, so
// nothing from before the bench is counted; then a thread polls until
// Stop(). Every record becomes a Receipt stamped with steady_clock at
// receipt (the same clock the mailbox writer stamps commits with, in the
// same process, so no clock skew enters), with its headers msgx-event-id
// and msgx-mailbox-id (docs/dispatch.md#headers) and its key (the FLID for
// KAFKA:msg). Take() hands over what arrived since the last call.
//
// Thread-safety: Start/Stop from one thread; Take() from any.
#pragma once

#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace msgx::app {

enum class BenchTopic { kMsg, kSchd, kRef };

struct Receipt {
  BenchTopic topic = BenchTopic::kMsg;
  std::string event_id;
  std::int64_t mailbox_id = 0;  // 0 when the header is absent
  std::string key;
  std::chrono::steady_clock::time_point at;
};

class BenchConsumer {
 public:
  // topics: msg, schd, ref, in that order.
  BenchConsumer(std::string bootstrap, std::vector<std::string> topics);
  ~BenchConsumer();
  BenchConsumer(const BenchConsumer&) = delete;
  BenchConsumer& operator=(const BenchConsumer&) = delete;

  // kInfra when the broker or a topic cannot be reached within 30 s.
  Status Start();
  void Stop();
  std::vector<Receipt> Take();
  std::int64_t errors() const { return errors_.load(); }

 private:
  void Loop();

  std::string bootstrap_;
  std::vector<std::string> topics_;
  rd_kafka_t* rk_ = nullptr;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> errors_{0};
  std::mutex mu_;
  std::vector<Receipt> pending_;
};

}  // namespace msgx::app
