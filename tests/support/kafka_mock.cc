// KafkaMock (tests/support/servers.h): librdkafka's in-process mock cluster.
// It lives in this process's threads, so it cannot outlive the test binary
// and needs no cleanup registry.
#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <cstdio>
#include <cstdlib>

#include "base/subprocess.h"
#include "tests/support/servers.h"

namespace msgx::testing {

struct KafkaMock::Impl {
  rd_kafka_t* rk = nullptr;
  rd_kafka_mock_cluster_t* cluster = nullptr;
  std::string bootstrap;

  ~Impl() {
    if (cluster != nullptr) rd_kafka_mock_cluster_destroy(cluster);
    if (rk != nullptr) rd_kafka_destroy(rk);
  }
};

std::unique_ptr<KafkaMock> KafkaMock::Start(int brokers) {
  auto impl = std::make_unique<Impl>();
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  // The handle only owns the cluster; keep its own chatter quiet, unless
  // MSGX_TEST_MOCK_DEBUG asks for the cluster's own log on stderr (every
  // append with its offsets: docs/crash-safety.md#the-mock-clusters-duplicates).
  if (std::getenv("MSGX_TEST_MOCK_DEBUG") != nullptr) {
    rd_kafka_conf_set(conf, "debug", "mock", err, sizeof(err));
    rd_kafka_conf_set(conf, "log_level", "7", err, sizeof(err));
  } else {
    rd_kafka_conf_set(conf, "log_level", "3", err, sizeof(err));
  }
  impl->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (impl->rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    ADD_FAILURE() << "KafkaMock: rd_kafka_new: " << err;
    std::abort();
  }
  impl->cluster = rd_kafka_mock_cluster_new(impl->rk, brokers);
  if (impl->cluster == nullptr) {
    ADD_FAILURE() << "KafkaMock: rd_kafka_mock_cluster_new failed";
    std::fprintf(stderr, "KafkaMock: rd_kafka_mock_cluster_new failed\n");
    std::abort();
  }
  impl->bootstrap = rd_kafka_mock_cluster_bootstraps(impl->cluster);
  return std::unique_ptr<KafkaMock>(new KafkaMock(std::move(impl)));
}

KafkaMock::KafkaMock(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
KafkaMock::~KafkaMock() = default;

std::string KafkaMock::Bootstrap() const { return impl_->bootstrap; }

void KafkaMock::CreateTopic(const std::string& name, int partitions) {
  rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(impl_->cluster, name.c_str(), partitions, 1);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ADD_FAILURE() << "KafkaMock::CreateTopic " << name << ": " << rd_kafka_err2str(e);
  }
}

namespace {

// librdkafka's set_down or set_up, with no Spawn() between fork and the
// child's close_range (servers.h).
void SetBroker(rd_kafka_mock_cluster_t* cluster, int broker_id, bool up) {
  NoSpawnInFlight quiet;
  rd_kafka_resp_err_t e = up ? rd_kafka_mock_broker_set_up(cluster, broker_id)
                             : rd_kafka_mock_broker_set_down(cluster, broker_id);
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
    ADD_FAILURE() << "KafkaMock: broker " << broker_id << (up ? " up: " : " down: ")
                  << rd_kafka_err2str(e);
  }
}

}  // namespace

void KafkaMock::SetBrokerDown(int broker_id) { SetBroker(impl_->cluster, broker_id, false); }

void KafkaMock::SetBrokerUp(int broker_id) { SetBroker(impl_->cluster, broker_id, true); }

rd_kafka_mock_cluster_s* KafkaMock::cluster() const { return impl_->cluster; }

}  // namespace msgx::testing
