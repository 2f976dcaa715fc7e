// The status document's outbox section (stream/service/status_model.h,
// docs/operations.md#status) against a real PostgreSQL: every target is
// listed with its undelivered count, the age of its oldest undelivered
// event and its DEAD count, read through the dispatchers' indexes; the
// delivered rows the retention keeps are not counted (that read the whole
// outbox).
#include <gtest/gtest.h>

#include <pqxx/pqxx>
#include <string>

#include "base/config.h"
#include "stream/service/status_model.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

class StatusOutboxTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    url_ = testing::CreateMigratedDatabase(pg_, "status_outbox_" + std::to_string(++n_));
  }

  // `n` events of `target` in `state`, created `age_s` seconds ago.
  void Insert(int n, const std::string& target, const std::string& state, int age_s) {
    pqxx::connection c(url_);
    pqxx::work w(c);
    w.exec_params(
        "INSERT INTO msg_event (event_key, target, partition_key, event_type, state_version, "
        "payload_json, state, created_at, sent_at) SELECT $1 || ':' || g, $2, 'F', 'UPSERT', g, "
        "'{}', $3::varchar, now() - make_interval(secs => $4::int), "
        "CASE WHEN $3::varchar = 'SENT' THEN now() END FROM generate_series(1, $5::int) g",
        target + state + std::to_string(next_++), target, state, age_s, n);
    w.commit();
  }

  // The status document of this database alone (no Redis, no state).
  rapidjson::Document Status() const {
    Config config;
    config.postgres_url = url_;
    config.redis_url.clear();
    config.state_dir = "/nonexistent/msgx-status-outbox";
    return BuildStatus(config, nullptr);
  }

  void Exec(const std::string& sql) {
    pqxx::connection c(url_);
    pqxx::work w(c);
    w.exec(sql);
    w.commit();
  }

  static int n_;
  std::string url_;
  int next_ = 0;
};
int StatusOutboxTest::n_ = 0;

TEST_F(StatusOutboxTest, EachTargetsPendingOldestAndDeadWithoutCountingTheSentOnes) {
  Insert(3, "KAFKA:msg", "PENDING", 7200);
  Insert(2, "KAFKA:msg", "PENDING", 60);
  Insert(2, "KAFKA:msg", "DEAD", 0);
  Insert(50, "KAFKA:msg", "SENT", 0);
  Insert(1, "KAFKA:ref", "DEAD", 0);
  Insert(4, "KAFKA:ref", "SENT", 0);
  const rapidjson::Document doc = Status();
  ASSERT_TRUE(doc.HasMember("outbox")) << ToJson(doc);
  const rapidjson::Value& outbox = doc["outbox"];
  ASSERT_TRUE(outbox.HasMember("KAFKA:msg") && outbox.HasMember("KAFKA:ref") &&
              outbox.HasMember("KAFKA:schd"))
      << ToJson(outbox);
  const rapidjson::Value& msg = outbox["KAFKA:msg"];
  EXPECT_EQ(msg["pending"].GetInt64(), 5);
  EXPECT_GE(msg["oldest_pending_s"].GetInt64(), 7200);
  EXPECT_LT(msg["oldest_pending_s"].GetInt64(), 7200 + 600);
  EXPECT_EQ(msg["dlq"].GetInt64(), 2);
  EXPECT_FALSE(msg.HasMember("sent"));
  EXPECT_EQ(outbox["KAFKA:ref"]["pending"].GetInt64(), 0);
  EXPECT_EQ(outbox["KAFKA:ref"]["oldest_pending_s"].GetInt64(), 0);
  EXPECT_EQ(outbox["KAFKA:ref"]["dlq"].GetInt64(), 1);
  EXPECT_EQ(outbox["KAFKA:schd"]["pending"].GetInt64(), 0);
  EXPECT_EQ(outbox["KAFKA:schd"]["dlq"].GetInt64(), 0);
}

// Events delivered as a range keep PENDING on their rows
// (docs/dispatch.md#delivered-ranges): they are not pending, however old,
// but a replayed one among them is, and it is the oldest. The target's
// delivered position is shown.
TEST_F(StatusOutboxTest, EventsOfADeliveredRangeAreNotPendingButAReplayAmongThemIs) {
  Insert(5, "KAFKA:msg", "PENDING", 9000);
  Insert(1, "KAFKA:msg", "PENDING", 8000);  // replayed below
  Insert(5, "KAFKA:msg", "PENDING", 9000);
  Exec("UPDATE msg_event SET replayed_at = now() WHERE event_key LIKE 'KAFKA:msgPENDING1:%'");
  Exec(
      "INSERT INTO outbox_delivery (target, first_event_id, last_event_id, events, sent_at) "
      "SELECT 'KAFKA:msg', min(event_id), max(event_id), 10, now() FROM msg_event");
  Insert(2, "KAFKA:msg", "PENDING", 60);
  const rapidjson::Document doc = Status();
  ASSERT_TRUE(doc.HasMember("outbox")) << ToJson(doc);
  const rapidjson::Value& msg = doc["outbox"]["KAFKA:msg"];
  EXPECT_EQ(msg["pending"].GetInt64(), 3) << ToJson(msg);
  ASSERT_TRUE(msg.HasMember("delivered_through")) << ToJson(msg);
  EXPECT_EQ(msg["delivered_through"].GetInt64(), 11) << ToJson(msg);
  EXPECT_EQ(doc["outbox"]["KAFKA:ref"]["delivered_through"].GetInt64(), 0);
  EXPECT_GE(msg["oldest_pending_s"].GetInt64(), 8000);
  EXPECT_LT(msg["oldest_pending_s"].GetInt64(), 8000 + 600);
}

}  // namespace
}  // namespace msgx
