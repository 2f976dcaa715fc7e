// KafkaPublisher: Publisher over librdkafka, one transaction per batch.
//
// Producer settings (docs/dispatch.md#producer-safety-settings): acks=all,
// enable.idempotence=true, max.in.flight.requests.per.connection=1 are set
// first; kafka.producer.* properties are applied on top; then the effective
// configuration is read back from the producer and Create() refuses (kConfig,
// naming the key) when any of the three is weaker. transactional.id comes from
// the caller (one per log, so a restarted msgx fences its former self).
//
// Errors: librdkafka failures are classified by ClassifyKafkaError(): a
// per-message permanent error is charged by the dispatcher; everything else
// is an outage. A fatal producer error (e.g. fenced), and any commit whose
// outcome this producer cannot settle by an abort, recreates the producer on
// the next Prepare() or Publish(): the new instance's init_transactions
// resolves the old transaction before anything else is done.
//
// Progress reads (ReadProgress) use a short-lived read_committed consumer
// with the bootstrap servers and the connection settings of
// kafka.producer.* (security.*, sasl.*, ssl.*, socket.*, client.dns.*,
// broker.address.*), bounded by txn_timeout.
#pragma once

#include <chrono>
#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/result.h"
#include "stream/dispatch/publisher.h"

struct rd_kafka_s;
struct rd_kafka_message_s;
struct rd_kafka_error_s;

namespace msgx {

struct KafkaPublisherOptions {
  std::string bootstrap_servers;
  std::map<std::string, std::string> producer;  // kafka.producer.*
  std::string transactional_id;
  std::chrono::milliseconds txn_timeout{10'000};  // each init/commit/abort call

  static KafkaPublisherOptions FromConfig(const Config& config, std::string transactional_id);
};

class KafkaPublisher final : public Publisher {
 public:
  // Builds and checks the producer (no broker contact yet; transactions are
  // initialised on the first Publish, so an unreachable broker is an outage
  // there, not a start-up failure).
  static Result<std::unique_ptr<KafkaPublisher>> Create(KafkaPublisherOptions options);
  KafkaPublisher(const KafkaPublisher&) = delete;  // librdkafka holds `this`
  KafkaPublisher& operator=(const KafkaPublisher&) = delete;
  ~KafkaPublisher() override;

  PublishResult Publish(std::span<const OutgoingMessage> batch) override;
  Status Prepare() override;
  Result<std::optional<std::string>> ReadProgress(const std::string& topic,
                                                  const std::string& key) override;

  // The effective value of a producer property, as librdkafka reports it.
  std::string EffectiveProperty(const std::string& name) const;

 private:
  explicit KafkaPublisher(KafkaPublisherOptions options);
  Status Build();
  void Destroy();
  // "<step>: <error>" of a failed transactional call, which it destroys; a
  // fatal error marks the producer for rebuilding.
  std::string TxnFailure(rd_kafka_error_s* e, const char* step);

  // The delivery-report callback (rd_kafka_conf opaque = this): records the
  // error of a message of the current batch, by its number, and counts its
  // messages acknowledged without an offset.
  static void OnDelivery(rd_kafka_s* rk, const rd_kafka_message_s* m, void* opaque);

  KafkaPublisherOptions options_;
  rd_kafka_s* rk_ = nullptr;
  std::uint64_t next_message_ = 1;   // numbers messages across batches
  std::uint64_t delivery_base_ = 0;  // number of the current batch's first
  std::vector<int> delivery_;        // its delivery errors (kNoReport: none yet)
  // Its messages the broker acknowledged without appending them: an offset
  // of -1 with no error, which is how a broker answers a request it takes
  // for a duplicate of one it already appended (librdkafka reports
  // DUPLICATE_SEQUENCE_NUMBER as a success). Logged after a commit: a real
  // broker holds such messages already, librdkafka's mock cluster may not
  // (docs/crash-safety.md#the-mock-clusters-duplicates).
  int unplaced_ = 0;
  static constexpr int kNoReport = INT_MIN;
  bool txn_ready_ = false;
  bool needs_rebuild_ = false;
};

// True for errors that are the message's own fault and will not heal by
// waiting: message too large, an invalid or corrupt record, a bad argument
// for this message (client-side codes included). Everything else is an
// outage of the target (docs/operations.md#error-classes): transport and
// timeouts, leader or coordinator changes, too few replicas, and the
// topic's or the cluster's authorisation (an ACL change is the cluster's
// fault, not the event's).
bool IsPermanentKafkaError(int rd_kafka_resp_err);

}  // namespace msgx
