// The sent-event compaction job (stream/jobs/event_retention.h) against a
// real PostgreSQL: only SENT events older than the retention go, DEAD and
// PENDING ones and newer SENT ones stay, in bounded batches, and a stale
// leader deletes nothing.
#include "stream/jobs/event_retention.h"

#include <gtest/gtest.h>

#include <memory>
#include <pqxx/pqxx>
#include <string>

#include "base/clock.h"
#include "stream/pg/pg_leadership.h"
#include "stream/pg/pg_session.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

constexpr MicrosSinceEpoch kHour = 3'600'000'000;

class EventRetentionTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    url_ = testing::CreateMigratedDatabase(pg_, "retention_" + std::to_string(++n_));
    session_ = std::make_unique<PgSession>(url_);
    lead_ = std::make_unique<PgLeadership>(url_, "log-R");
    auto led = lead_->TryAcquire();
    ASSERT_TRUE(led.ok() && led->leader);
    epoch_ = led->epoch;
  }

  // `n` events in `state`, sent (if SENT) `age_hours` before the clock.
  void Insert(int n, const std::string& state, int age_hours) {
    const std::string sent =
        state == "SENT" ? "'" + PgTimestamp(clock_.NowMicros() - age_hours * kHour) + "'" : "NULL";
    pqxx::connection c(url_);
    pqxx::work w(c);
    w.exec_params(
        "INSERT INTO msg_event (event_key, target, partition_key, event_type, state_version, "
        "payload_json, state, created_at, sent_at) SELECT $1 || ':' || g, 'KAFKA:msg', 'F', "
        "'UPSERT', g, '{}', $2, now(), " +
            sent + " FROM generate_series(1, $3) g",
        state + std::to_string(age_hours) + "-" + std::to_string(next_++), state, n);
    w.commit();
  }

  std::int64_t Count(const std::string& where) {
    pqxx::connection c(url_);
    pqxx::nontransaction nt(c);
    return nt.exec1("SELECT count(*) FROM msg_event WHERE " + where)[0].as<std::int64_t>();
  }

  EventRetention Job(int batch = 1000) {
    EventRetentionOptions o;
    o.log_uuid = "log-R";
    o.retention = Millis(24 * 3'600'000);  // a day
    o.batch = batch;
    return EventRetention(session_.get(), &clock_, o);
  }

  static int n_;
  std::string url_;
  std::unique_ptr<PgSession> session_;
  std::unique_ptr<PgLeadership> lead_;
  std::int64_t epoch_ = 0;
  ManualClock clock_{SystemClock::Default()->NowMicros()};
  int next_ = 0;
};
int EventRetentionTest::n_ = 0;

TEST_F(EventRetentionTest, OnlySentEventsOlderThanTheRetentionGo) {
  Insert(5, "SENT", 30);    // older than a day: due
  Insert(4, "SENT", 2);     // newer: kept
  Insert(3, "DEAD", 0);     // the dead-letter queue: kept
  Insert(2, "PENDING", 0);  // a dispatcher's: kept
  EventRetention job = Job();
  auto backlog = job.Backlog(100);
  ASSERT_TRUE(backlog.ok()) << backlog.status().ToString();
  EXPECT_EQ(*backlog, 5);
  auto n = job.Step(epoch_);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 5);
  EXPECT_EQ(Count("state = 'SENT'"), 4);
  EXPECT_EQ(Count("state = 'DEAD'"), 3);
  EXPECT_EQ(Count("state = 'PENDING'"), 2);
  auto again = job.Step(epoch_);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, 0);
  // A day later the newer ones are due too.
  clock_.Advance(std::chrono::hours(24));
  EXPECT_EQ(*job.Step(epoch_), 4);
  EXPECT_EQ(Count("true"), 5);
}

TEST_F(EventRetentionTest, WorksInBoundedBatchesOldestFirst) {
  Insert(250, "SENT", 50);
  Insert(10, "SENT", 40);
  EventRetention job = Job(100);
  EXPECT_EQ(*job.Step(epoch_), 100);
  EXPECT_EQ(*job.Step(epoch_), 100);
  EXPECT_EQ(Count("state = 'SENT'"), 60);
  // The 40-hour-old ones were sent last, so they are the last to go.
  EXPECT_EQ(Count("event_key LIKE 'SENT40-%'"), 10);
  EXPECT_EQ(*job.Step(epoch_), 60);
  EXPECT_EQ(Count("true"), 0);
}

TEST_F(EventRetentionTest, AStaleLeaderDeletesNothing) {
  Insert(5, "SENT", 30);
  EventRetention job = Job();
  pg_->Psql(url_.substr(url_.rfind('/') + 1),
            "UPDATE pipeline SET leader_epoch = leader_epoch + 1");
  auto n = job.Step(epoch_);
  ASSERT_FALSE(n.ok());
  EXPECT_EQ(n.status().error_class(), ErrorClass::kInfra);
  EXPECT_NE(n.status().message().find("stale epoch"), std::string::npos) << n.status().message();
  EXPECT_EQ(Count("true"), 5);
  EXPECT_EQ(job.Step(0).status().error_class(), ErrorClass::kInfra);  // not leading at all
}

}  // namespace
}  // namespace msgx
