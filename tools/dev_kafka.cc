#include "tools/dev_kafka.h"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "base/subprocess.h"

namespace msgx::app {
namespace {

namespace fs = std::filesystem;

Status WriteAtomically(const std::string& path, const std::string& value) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << value << "\n";
    if (!out) return Status::Infra("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::Infra("rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

// Removes `path` if it still holds `value` (a newer broker may own it).
void RemoveIfOwn(const std::string& path, const std::string& value) {
  Result<std::string> text = ReadFileToString(path);
  if (text.ok() && *text == value + "\n") {
    std::error_code ec;
    fs::remove(path, ec);
  }
}

}  // namespace

Status RunDevKafka(const std::string& dir, const std::vector<std::string>& topics, int brokers) {
  // Blocked before librdkafka starts its threads, so only sigwait sees them.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "log_level", "4", err, sizeof(err));
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    rd_kafka_conf_destroy(conf);
    return Status::Infra(std::string("rd_kafka_new: ") + err);
  }
  rd_kafka_mock_cluster_t* cluster = rd_kafka_mock_cluster_new(rk, brokers);
  if (cluster == nullptr) {
    rd_kafka_destroy(rk);
    return Status::Infra("rd_kafka_mock_cluster_new failed");
  }
  Status status;
  for (const std::string& topic : topics) {
    rd_kafka_resp_err_t e = rd_kafka_mock_topic_create(cluster, topic.c_str(), 1, 1);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) {
      status = Status::Infra("create topic " + topic + ": " + rd_kafka_err2str(e));
    }
  }
  const std::string bootstrap = rd_kafka_mock_cluster_bootstraps(cluster);
  const std::string pid = std::to_string(getpid());
  const std::string pid_path = dir + "/kafka.pid";
  const std::string bootstrap_path = dir + "/kafka.bootstrap";
  if (status.ok()) status = WriteAtomically(pid_path, pid);
  if (status.ok()) status = WriteAtomically(bootstrap_path, bootstrap);
  if (status.ok()) {
    std::cout << "msgx dev kafka: mock cluster on " << bootstrap << " (pid " << pid
              << "); SIGTERM stops it" << std::endl;
    int sig = 0;
    sigwait(&stop, &sig);
    std::cout << "msgx dev kafka: signal " << sig << ", stopping" << std::endl;
  }
  RemoveIfOwn(bootstrap_path, bootstrap);
  RemoveIfOwn(pid_path, pid);
  rd_kafka_mock_cluster_destroy(cluster);
  rd_kafka_destroy(rk);
  return status;
}

}  // namespace msgx::app
