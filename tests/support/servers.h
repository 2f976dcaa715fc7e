// Throwaway real servers for integration tests
// (docs/testing.md#real-servers-in-tests). Each Start() picks a free loopback
// port, waits until the server answers, and registers the server for cleanup:
// the destructor stops it and removes its files, and an atexit/signal hook does
// the same when a test aborts. Start() failing is a fatal test error
// (GTEST_FAIL + abort).
//
// PostgreSQL runs as the `postgres` user when the process is root (initdb
// refuses root); its data directory lives under /tmp and is chowned.
//
// MariaDB runs as the `mysql` user when the process is root (mariadbd
// refuses root), with real grants (no --skip-grant-tables): tests create
// least-privilege accounts.
//
// Thread-safety: not thread-safe; one test thread drives a server.
#pragma once

#include <memory>
#include <string>
#include <vector>

struct rd_kafka_mock_cluster_s;

namespace msgx::testing {

class PgServer {
 public:
  // initdb + pg_ctl start on a free port; trust auth on 127.0.0.1.
  static std::unique_ptr<PgServer> Start();
  ~PgServer();
  PgServer(const PgServer&) = delete;
  PgServer& operator=(const PgServer&) = delete;

  int port() const;
  // postgresql://postgres@127.0.0.1:<port>/<db>
  std::string Url(const std::string& db = "postgres") const;
  // CREATE DATABASE <name> (no-op if it exists).
  void CreateDatabase(const std::string& name);
  // Runs SQL through psql -v ON_ERROR_STOP=1; returns stdout, fails the test
  // on error. For fixtures only; code under test uses libpqxx.
  std::string Psql(const std::string& db, const std::string& sql);
  // Stops (fast shutdown) / starts again on the same port and data, for
  // outage tests.
  void Stop();
  void Restart();

 private:
  struct Impl;
  explicit PgServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class MariaDbServer {
 public:
  // mariadb-install-db into a temp dir + mariadbd as a child on a free
  // 127.0.0.1 port (unix socket in the temp dir, max_allowed_packet 64 MiB,
  // utf8mb4 by default). An account msgx@'%' (password msgx) has every
  // privilege; root is reachable through the socket only.
  static std::unique_ptr<MariaDbServer> Start();
  ~MariaDbServer();
  MariaDbServer(const MariaDbServer&) = delete;
  MariaDbServer& operator=(const MariaDbServer&) = delete;

  int port() const;
  std::string socket() const;
  // mysql://<user>:<password>@127.0.0.1:<port>/<db>
  std::string Url(const std::string& db, const std::string& user = "msgx",
                  const std::string& password = "msgx") const;
  // Runs SQL as root through the `mariadb` client (batch mode, tab-separated,
  // no column names); returns stdout, fails the test on error. For fixtures
  // only; code under test uses libmariadb.
  std::string Sql(const std::string& db, const std::string& sql);
  // Stops (SIGTERM, a clean shutdown) / starts again on the same port and data.
  void Stop();
  void Restart();

 private:
  struct Impl;
  explicit MariaDbServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

class RedisServer {
 public:
  // redis-server on a free port, no persistence.
  static std::unique_ptr<RedisServer> Start();
  ~RedisServer();
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;

  int port() const;
  std::string Url() const;  // redis://127.0.0.1:<port>/0
  // Runs redis-cli with `args` against this server (at most 10 s); returns
  // its stdout, "" when it could not run. For fixtures and fault injection.
  std::string Cli(const std::vector<std::string>& args) const;
  void Stop();
  void Restart();

 private:
  struct Impl;
  explicit RedisServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// librdkafka's mock cluster: a real Kafka-protocol broker on loopback.
class KafkaMock {
 public:
  static std::unique_ptr<KafkaMock> Start(int brokers = 1);
  ~KafkaMock();
  KafkaMock(const KafkaMock&) = delete;
  KafkaMock& operator=(const KafkaMock&) = delete;

  std::string Bootstrap() const;  // "127.0.0.1:port[,…]"
  void CreateTopic(const std::string& name, int partitions = 1);
  // The broker refuses connections until SetBrokerUp, and keeps its port.
  // Use these, not rd_kafka_mock_broker_set_down/up: going down closes the
  // listener and binds its port again at once, and a child that Spawn()
  // forks in that moment would hold the old listener open and make the bind
  // fail, which aborts the process (docs/testing.md#the-kafka-mock-and-spawned-children).
  void SetBrokerDown(int broker_id = 1);
  void SetBrokerUp(int broker_id = 1);
  // For other error injection (push_request_errors, set_rtt).
  rd_kafka_mock_cluster_s* cluster() const;

 private:
  struct Impl;
  explicit KafkaMock(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace msgx::testing
