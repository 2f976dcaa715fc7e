// Publisher: the seam between the dispatcher and Kafka
// (docs/dispatch.md#order-across-failures; issue 6).
//
// A batch is published as ONE unit: either every message of it becomes
// visible, in order, or none does. The Kafka implementation does this with
// one Kafka transaction per batch (docs/dispatch.md says why), so the
// guarantee holds for `isolation.level=read_committed` consumers; a
// read_uncommitted consumer may also see the messages of an aborted attempt,
// each with the same msgx-event-id as its later good copy.
//
// Exactly once (docs/dispatch.md#exactly-once): the dispatcher appends a
// progress record to each batch (to a fixed partition of the progress
// topic), and before it sends anything after a start, a leader change or an
// uncertain outcome it calls Prepare() and then ReadProgress() to learn what
// Kafka already holds.
//
// Thread-safety: implementations are not thread-safe; one dispatcher owns a
// publisher.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/status.h"

namespace msgx {

struct OutgoingMessage {
  std::string topic;
  std::string key;
  std::string value;
  std::vector<std::pair<std::string, std::string>> headers;  // in order
  int partition = -1;  // -1: by key (the producer's partitioner)
};

struct PublishResult {
  // Every message was published and is visible.
  bool committed = false;
  // When not committed and no message is to blame: an outage (broker down,
  // timeouts, coordinator moving, not enough replicas). kInfra; nothing may
  // be charged to any message.
  Status outage;
  // When not committed because of one message: its index in the batch and
  // the error (message too large, invalid record, authorisation). Nothing of
  // the batch is visible; the dispatcher decides whom to charge.
  std::optional<std::size_t> permanent_index;
  std::string permanent_error;
};

class Publisher {
 public:
  virtual ~Publisher() = default;
  // Publishes `batch` as one unit; see PublishResult. Blocks until the
  // outcome is known (bounded by the implementation's timeouts).
  virtual PublishResult Publish(std::span<const OutgoingMessage> batch) = 0;

  // Makes sure no earlier transaction of this transactional id can still
  // commit (Kafka's init_transactions fences and resolves it), so that a
  // progress read afterwards is final. An outage is kInfra.
  virtual Status Prepare() = 0;

  // The value of the last committed message with `key` in partition 0 of
  // `topic`, read as an isolation.level=read_committed consumer; nothing when
  // the topic or the key has none. An outage (broker down, timeout) is kInfra.
  virtual Result<std::optional<std::string>> ReadProgress(const std::string& topic,
                                                          const std::string& key) = 0;
};

}  // namespace msgx
