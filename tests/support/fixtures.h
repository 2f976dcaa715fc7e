// Small fixtures shared by the integration tests.
//
// Thread-safety: none needed; each test thread calls them for itself.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace msgx::testing {

class PgServer;
class RedisServer;

// Creates database `name` on `pg` and applies the real migrations
// (migrations/V*.sql) to it; returns its URL. Fails the test on error.
std::string CreateMigratedDatabase(PgServer* pg, const std::string& name);

// The bytes of one corpus file (MSGX_CORPUS_DIR/name); empty and a test
// failure when it cannot be read.
std::string ReadCorpusFile(const std::string& name);

// Runs `msgx refold --verify` with `env` (for at most `limit`) and expects
// exit 0: the live state equals a re-fold of the log.
void ExpectRefoldVerifies(const std::vector<std::string>& env, std::chrono::minutes limit);

// `env` (NAME=value entries, as for SpawnOptions::extra_env) with `more`
// added; an entry of `more` replaces `env`'s of the same name (of two
// entries of one name, the first would win).
std::vector<std::string> EnvWith(std::vector<std::string> env,
                                 const std::vector<std::string>& more);

// While `msgx run` runs: waits until proc_state (in `own_url`) holds `rows`
// rows, every outbox event is SENT (none PENDING or DEAD), and the mirror's
// offset in `redis` is PostgreSQL's applied offset, all of it on two looks
// in a row 250 ms apart; false on timeout.
bool WaitSettled(const std::string& own_url, const RedisServer& redis, std::int64_t rows,
                 std::chrono::milliseconds timeout);

// A message read back from Kafka.
struct ConsumedMessage {
  std::string key;
  std::string value;
  std::map<std::string, std::string> headers;
  std::int64_t offset = -1;  // in its partition
};

// Reads partition 0 of `topic` from the beginning as a read_committed
// consumer until `want` messages have arrived or `wait` has passed.
std::vector<ConsumedMessage> ConsumeTopic(const std::string& bootstrap, const std::string& topic,
                                          size_t want, std::chrono::milliseconds wait);

// The same, also ending when `stop()` turns true (checked every 100 ms): a
// consumer that runs beside the producer (MSGX_TEST_KAFKA_DEBUG=1 prints
// the partition's watermarks at the end). librdkafka's mock cluster keeps
// only the last ~5 MB of a partition, so a long stream must be read while it
// is written. `ready` (may be null) turns true once the consumer has reached
// the partition's end, at the high watermark the broker reports then: start
// the producer after that.
std::vector<ConsumedMessage> ConsumeTopicUntil(const std::string& bootstrap,
                                               const std::string& topic, size_t want,
                                               std::chrono::milliseconds wait,
                                               const std::function<bool()>& stop,
                                               std::atomic<bool>* ready);

// Partition 0's low and high watermarks as the broker reports them (-1 when
// the query fails): what a failed read-back check prints.
std::pair<std::int64_t, std::int64_t> QueryWatermarks(const std::string& bootstrap,
                                                      const std::string& topic);

}  // namespace msgx::testing
