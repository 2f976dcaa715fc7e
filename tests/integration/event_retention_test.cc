// The sent-event compaction job (stream/jobs/event_retention.h) against a
// real PostgreSQL: only SENT events older than the retention go (marked
// row by row or delivered as a range), DEAD and PENDING ones and newer SENT
// ones stay, in bounded batches, and a stale leader deletes nothing.
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
    return nt.exec1("SELECT count(*) FROM msg_event_state WHERE " + where)[0].as<std::int64_t>();
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

// Events delivered as a range (stream/pg/outbox_delivery.h) keep their
// PENDING rows: the range goes whole with them once it is older than the
// retention. A DEAD row or a replayed one inside it is not delivered and
// stays, and the newest range of each target stays with its rows: it holds
// the target's delivered position.
TEST_F(EventRetentionTest, DeliveredRangesGoWholeButNeverTheNewestOfATarget) {
  const std::string old_sent = PgTimestamp(clock_.NowMicros() - 30 * kHour);
  const std::string new_sent = PgTimestamp(clock_.NowMicros() - 2 * kHour);
  pqxx::connection c(url_);
  pqxx::work w(c);
  w.exec(
      "INSERT INTO msg_event (event_id, event_key, target, event_type, state_version, "
      "payload_json, state, replayed_at, created_at) SELECT g, 'k' || g, CASE WHEN g > 20 THEN "
      "'KAFKA:ref' ELSE 'KAFKA:msg' END, 'UPSERT', g, '{}', CASE WHEN g = 5 THEN 'DEAD' ELSE "
      "'PENDING' END, CASE WHEN g = 6 THEN now() END, now() FROM generate_series(1, 23) g");
  w.exec_params(
      "INSERT INTO outbox_delivery (target, first_event_id, last_event_id, events, sent_at) "
      "VALUES ('KAFKA:msg', 1, 9, 7, $1::timestamptz), ('KAFKA:msg', 10, 11, 2, $2::timestamptz), "
      "('KAFKA:ref', 21, 22, 2, $1::timestamptz)",
      old_sent, new_sent);
  w.commit();
  ASSERT_EQ(Count("state = 'SENT'"), 11);
  EventRetention job = Job();
  auto backlog = job.Backlog(100);
  ASSERT_TRUE(backlog.ok()) << backlog.status().ToString();
  EXPECT_EQ(*backlog, 7);
  auto n = job.Step(epoch_);
  ASSERT_TRUE(n.ok()) << n.status().ToString();
  EXPECT_EQ(*n, 7);
  auto ids = [&] {
    pqxx::nontransaction nt(c);
    return nt
        .exec1(
            "SELECT string_agg(event_id || state, ',' ORDER BY event_id) FROM "
            "msg_event_state")[0]
        .as<std::string>();
  };
  EXPECT_EQ(ids(),
            "5DEAD,6PENDING,10SENT,11SENT,12PENDING,13PENDING,14PENDING,15PENDING,16PENDING,"
            "17PENDING,18PENDING,19PENDING,20PENDING,21SENT,22SENT,23PENDING");
  EXPECT_EQ(*job.Step(epoch_), 0);
  // A day later KAFKA:msg's last range is due, but it is still the newest.
  clock_.Advance(std::chrono::hours(24));
  EXPECT_EQ(*job.Backlog(100), 0);
  EXPECT_EQ(*job.Step(epoch_), 0);
  EXPECT_EQ(Count("state = 'SENT'"), 4);
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
