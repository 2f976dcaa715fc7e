// The crash loops' Kafka check (tests/support/kafka_check.h) against a real
// PostgreSQL and the librdkafka mock: a partition that holds none of a
// target's SENT events is a loss, unless a reconcile's warning in msgx's log
// names every one of them (docs/crash-safety.md#the-mock-clusters-duplicates).
#include "tests/support/kafka_check.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

constexpr char kTopic[] = "reference.check";

class KafkaCheckTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    url_ = testing::CreateMigratedDatabase(pg_, "kafka_check_" + std::to_string(++n_));
    kafka_ = testing::KafkaMock::Start();
    kafka_->CreateTopic(kTopic);
    // Three KAFKA:ref events, recorded delivered as one range.
    pqxx::connection c(url_);
    pqxx::work w(c);
    w.exec(
        "INSERT INTO msg_event (event_id, event_key, target, event_type, state_version, "
        "payload_json, created_at) SELECT g, 'k' || g, 'KAFKA:ref', 'UPSERT', g, '{}', now() "
        "FROM generate_series(1, 3) g");
    w.exec(
        "INSERT INTO outbox_delivery (target, first_event_id, last_event_id, events, sent_at) "
        "VALUES ('KAFKA:ref', 1, 3, 3, now())");
    w.commit();
    log_ = (std::filesystem::temp_directory_path() /
            ("msgx-kafka-check-" + std::to_string(::getpid()) + ".log"))
               .string();
  }
  void TearDown() override { std::filesystem::remove(log_); }

  // msgx's log with the dispatcher's reconcile warning for lo..hi
  // (stream/dispatch/dispatcher.cc, MarkDelivered).
  void WriteReconcileLine(int lo, int hi) const {
    std::ofstream out(log_);
    out << R"({"ts":"2026-12-06T07:00:00.000000Z","level":"warn","component":"dispatch",)"
        << R"("msg":"KAFKA:ref: )" << hi - lo + 1
        << R"( events already in Kafka (delivered up to 3) marked SENT without a send: )"
        << "event_id " << lo << ".." << hi << "\"}\n";
  }

  testing::KafkaTailCheck Check() const {
    return testing::CheckKafkaTail(kafka_->Bootstrap(), kTopic, url_, "KAFKA:ref",
                                   /*require_once=*/false, log_);
  }

  static int n_;
  std::string url_;
  std::string log_;
  std::unique_ptr<testing::KafkaMock> kafka_;
};
int KafkaCheckTest::n_ = 0;

TEST_F(KafkaCheckTest, AnEmptyPartitionIsALossUnlessAReconcileMarkedEverySentEvent) {
  const auto no_log = Check();
  ASSERT_EQ(no_log.problems.size(), 1u);
  EXPECT_NE(no_log.problems[0].find("nothing read back from reference.check (3 SENT events of "
                                    "KAFKA:ref, 3 of them not marked by a reconcile"),
            std::string::npos)
      << no_log.problems[0];

  WriteReconcileLine(1, 2);
  const auto part = Check();
  ASSERT_EQ(part.problems.size(), 1u);
  EXPECT_NE(part.problems[0].find("1 of them not marked by a reconcile"), std::string::npos)
      << part.problems[0];

  WriteReconcileLine(1, 3);
  const auto all = Check();
  EXPECT_TRUE(all.problems.empty()) << all.problems[0];
  EXPECT_EQ(all.read, 0u);
  EXPECT_EQ(all.reconciled_missing, 3);
}

}  // namespace
}  // namespace msgx
