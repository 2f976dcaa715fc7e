#include "tests/support/fixtures.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>

#include "base/subprocess.h"
#include "migrations/migrator.h"
#include "tests/support/servers.h"

namespace msgx::testing {
namespace {

// Partition 0's watermarks through the handle `c`; -1, -1 when the broker
// does not answer.
std::pair<std::int64_t, std::int64_t> Watermarks(rd_kafka_t* c, const std::string& topic) {
  int64_t low = -1;
  int64_t high = -1;
  if (rd_kafka_query_watermark_offsets(c, topic.c_str(), 0, &low, &high, 5000) !=
      RD_KAFKA_RESP_ERR_NO_ERROR) {
    return {-1, -1};
  }
  return {low, high};
}

}  // namespace

std::string CreateMigratedDatabase(PgServer* pg, const std::string& name) {
  pg->CreateDatabase(name);
  std::string url = pg->Url(name);
  auto report = Migrator(MSGX_SOURCE_DIR "/migrations").Migrate(url);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return url;
}

std::string ReadCorpusFile(const std::string& name) {
  std::ifstream in(std::string(MSGX_CORPUS_DIR) + "/" + name, std::ios::binary);
  EXPECT_TRUE(in.good()) << "corpus file " << name;
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void ExpectRefoldVerifies(const std::vector<std::string>& env, std::chrono::minutes limit) {
  SpawnOptions refold;
  refold.argv = {MSGX_BINARY, "refold", "--verify"};
  refold.extra_env = env;
  auto r = RunCommand(refold, "", limit);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status.code, 0) << r->out << r->err;
}

std::vector<std::string> EnvWith(std::vector<std::string> env,
                                 const std::vector<std::string>& more) {
  std::erase_if(env, [&](const std::string& e) {
    const std::string name = e.substr(0, e.find('=') + 1);
    for (const std::string& m : more) {
      if (m.rfind(name, 0) == 0) return true;
    }
    return false;
  });
  env.insert(env.end(), more.begin(), more.end());
  return env;
}

bool WaitSettled(const std::string& own_url, const RedisServer& redis, std::int64_t rows,
                 std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  int stable = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    try {
      pqxx::connection c(own_url);
      pqxx::nontransaction nt(c);
      const auto outcomes = nt.exec1("SELECT count(*) FROM proc_state")[0].as<std::int64_t>();
      const auto unsent = nt.exec1("SELECT count(*) FROM msg_event_state WHERE state <> 'SENT'")[0]
                              .as<std::int64_t>();
      const auto applied =
          nt.exec1("SELECT coalesce(max(applied_offset), -2) FROM pipeline")[0].as<std::int64_t>();
      const std::string mirror = redis.Cli({"HGET", "msgx:mirror", "offset"});
      const bool done = outcomes == rows && unsent == 0 && mirror == std::to_string(applied) + "\n";
      stable = done ? stable + 1 : 0;
      if (stable >= 2) return true;
    } catch (const std::exception&) {
      stable = 0;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  return false;
}

std::vector<ConsumedMessage> ConsumeTopic(const std::string& bootstrap, const std::string& topic,
                                          size_t want, std::chrono::milliseconds wait) {
  return ConsumeTopicUntil(
      bootstrap, topic, want, wait, [] { return false; }, nullptr);
}

std::vector<ConsumedMessage> ConsumeTopicUntil(const std::string& bootstrap,
                                               const std::string& topic, size_t want,
                                               std::chrono::milliseconds wait,
                                               const std::function<bool()>& stop,
                                               std::atomic<bool>* ready) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "group.id", "msgx-test", err, sizeof(err));
  rd_kafka_conf_set(conf, "isolation.level", "read_committed", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
  // A reset must never skip forward silently: start again from the oldest.
  rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof(err));
  // The end of the partition shows on a fetch that finds nothing, which the
  // broker would otherwise hold for 500 ms.
  rd_kafka_conf_set(conf, "fetch.wait.max.ms", "50", err, sizeof(err));
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  EXPECT_NE(c, nullptr) << err;
  if (c == nullptr) return {};
  // The partition's leader known before the assignment: without it the
  // offset query finds none, and librdkafka tries again only after 500 ms.
  {
    rd_kafka_topic_t* t = rd_kafka_topic_new(c, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(c, 0, t, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR)
      rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
  }
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, topic.c_str(), 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(c, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  std::vector<ConsumedMessage> out;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (out.size() < want && std::chrono::steady_clock::now() < deadline && !stop()) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ConsumedMessage x;
      x.offset = m->offset;
      x.key.assign(static_cast<const char*>(m->key), m->key_len);
      x.value.assign(static_cast<const char*>(m->payload), m->len);
      rd_kafka_headers_t* hdrs = nullptr;
      if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name = nullptr;
        const void* val = nullptr;
        size_t size = 0;
        for (size_t i = 0; rd_kafka_header_get_all(hdrs, i, &name, &val, &size) == 0; ++i) {
          x.headers[name] = std::string(static_cast<const char*>(val), size);
        }
      }
      out.push_back(std::move(x));
    } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF && ready != nullptr) {
      // The end counts only at the broker's high watermark: on a loaded
      // machine librdkafka has reported an end before the first fetch of a
      // partition that held messages (docs/crash-safety.md, "Run 18"), and
      // the tail check then read nothing.
      const std::int64_t high = Watermarks(c, topic).second;
      if (high >= 0 && m->offset >= high) *ready = true;
    }
    rd_kafka_message_destroy(m);
  }
  if (std::getenv("MSGX_TEST_KAFKA_DEBUG")) {
    const auto [low, high] = Watermarks(c, topic);
    std::printf("topic %s: low %lld high %lld, read %zu\n", topic.c_str(),
                static_cast<long long>(low), static_cast<long long>(high), out.size());
  }
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  return out;
}

std::pair<std::int64_t, std::int64_t> QueryWatermarks(const std::string& bootstrap,
                                                      const std::string& topic) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  if (c == nullptr) return {-1, -1};
  const auto marks = Watermarks(c, topic);
  rd_kafka_destroy(c);
  return marks;
}

}  // namespace msgx::testing
