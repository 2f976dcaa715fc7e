// The outbox dispatcher against a real PostgreSQL (migrated with the real
// migrations) and librdkafka's mock cluster, read back by a read_committed
// consumer.
#include "stream/dispatch/dispatcher.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/log.h"
#include "stream/dispatch/event_replay.h"
#include "stream/dispatch/kafka_publisher.h"
#include "stream/pg/pg_leadership.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Wraps a real publisher; while `outage` is set it fails every batch as an
// outage without sending (the seam test double for "the broker is down"),
// and while `progress_outage` is set the progress cannot be read.
class SwitchablePublisher final : public Publisher {
 public:
  explicit SwitchablePublisher(Publisher* real) : real_(real) {}
  PublishResult Publish(std::span<const OutgoingMessage> batch) override {
    ++calls;
    if (outage) {
      PublishResult r;
      r.outage = Status::Infra("test: broker unreachable");
      return r;
    }
    return real_->Publish(batch);
  }
  Status Prepare() override {
    if (progress_outage) return Status::Infra("test: broker unreachable");
    return real_->Prepare();
  }
  Result<std::optional<std::string>> ReadProgress(const std::string& topic,
                                                  const std::string& key) override {
    if (progress_outage) return Status::Infra("test: broker unreachable");
    return real_->ReadProgress(topic, key);
  }
  bool outage = false;           // Publish fails
  bool progress_outage = false;  // Prepare and ReadProgress fail
  int calls = 0;

 private:
  Publisher* real_;
};

// Refuses, as a permanent error, every batch that holds the message with
// value `refused` while `refuse` is set; otherwise the real publisher.
class RefusingPublisher final : public Publisher {
 public:
  RefusingPublisher(Publisher* real, std::string refused)
      : real_(real), refused_(std::move(refused)) {}
  PublishResult Publish(std::span<const OutgoingMessage> batch) override {
    for (size_t i = 0; refuse && i < batch.size(); ++i) {
      if (batch[i].value != refused_) continue;
      PublishResult r;
      r.permanent_index = i;
      r.permanent_error = "test: refused";
      return r;
    }
    return real_->Publish(batch);
  }
  Status Prepare() override { return real_->Prepare(); }
  Result<std::optional<std::string>> ReadProgress(const std::string& topic,
                                                  const std::string& key) override {
    return real_->ReadProgress(topic, key);
  }
  bool refuse = true;

 private:
  Publisher* real_;
  std::string refused_;
};

class DispatcherTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    const std::string db = "disp_" + std::to_string(++db_counter_);
    url_ = testing::CreateMigratedDatabase(pg_, db);
    session_ = std::make_unique<PgSession>(url_);
    kafka_ = testing::KafkaMock::Start(1);
    kafka_->CreateTopic("t.msg", 1);
    kafka_->CreateTopic("t.schd", 1);
    kafka_->CreateTopic("t.progress", 1);
  }

  std::unique_ptr<KafkaPublisher> MakePublisher(std::map<std::string, std::string> props = {}) {
    KafkaPublisherOptions o;
    o.bootstrap_servers = kafka_->Bootstrap();
    o.producer = std::move(props);
    o.transactional_id = "disp-test-" + std::to_string(db_counter_);
    o.txn_timeout = milliseconds(3000);
    auto p = KafkaPublisher::Create(o);
    EXPECT_TRUE(p.ok()) << p.status().ToString();
    return p.ok() ? std::move(p.value()) : nullptr;
  }

  DispatcherOptions Options(const std::string& target, const std::string& topic) {
    DispatcherOptions o;
    o.target = target;
    o.topic = topic;
    o.max_attempts = 3;
    o.claim_limit = 100;
    o.aggregate = target == "KAFKA:schd";
    o.overlap_sent_update = false;  // the rows are final after each step
    o.progress_topic = "t.progress";
    o.progress_key = DispatcherOptions::ProgressKey("log-test", target);
    return o;
  }

  void InsertEvent(const std::string& target, const std::string& flid, std::int64_t version,
                   const std::string& payload) {
    pg_->Psql(UrlDb(),
              "INSERT INTO msg_event (event_key, target, partition_key, event_type, "
              "state_version, payload_json, created_at, source_msg_id) VALUES ('" +
                  target + ":" + std::to_string(version) + ":0', '" + target + "', '" + flid +
                  "', 'UPSERT', " + std::to_string(version) + ", '" + payload + "', now(), " +
                  std::to_string(1000 + version) + ")");
  }

  // KAFKA:msg events of versions 1..n, flight "F<v % 3>", payload {"v":v}.
  void InsertMsgEvents(int n) {
    for (int v = 1; v <= n; ++v) {
      InsertEvent("KAFKA:msg", "F" + std::to_string(v % 3), v, "{\"v\":" + std::to_string(v) + "}");
    }
  }

  std::string Query(const std::string& sql) {
    std::string out = pg_->Psql(UrlDb(), sql);
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    return out;
  }
  std::string UrlDb() const { return url_.substr(url_.rfind('/') + 1); }

  // Terminates every connection to the test's database but the caller's.
  void TerminateConnections() {
    Query("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = '" +
          UrlDb() + "' AND pid <> pg_backend_pid()");
  }

  // Steps until `n` events are SENT (at most 20 steps).
  void StepUntilSent(Dispatcher& d, int n) {
    const std::string want = std::to_string(n);
    for (int i = 0;
         i < 20 && Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'") != want;
         ++i) {
      ASSERT_TRUE(d.Step().ok());
    }
  }

  // Steps until idle/gated/waiting (bounded).
  std::vector<DispatchStep> Drain(Dispatcher& d, int max_steps = 50) {
    std::vector<DispatchStep> steps;
    for (int i = 0; i < max_steps; ++i) {
      auto s = d.Step();
      EXPECT_TRUE(s.ok()) << s.status().ToString();
      if (!s.ok()) break;
      steps.push_back(*s);
      if (s->kind != DispatchStep::Kind::kSent && s->kind != DispatchStep::Kind::kCharged) break;
    }
    return steps;
  }

  static int db_counter_;
  std::string url_;
  std::unique_ptr<PgSession> session_;
  std::unique_ptr<testing::KafkaMock> kafka_;
  ManualClock clock_{1'796'000'000'000'000};
};
int DispatcherTest::db_counter_ = 0;

TEST_F(DispatcherTest, DeliversEveryEventInOrderPerKeyWithHeaders) {
  for (int v = 1; v <= 60; ++v) {
    InsertEvent("KAFKA:msg", "F" + std::to_string(v % 5), v, "{\"v\":" + std::to_string(v) + "}");
  }
  auto pub = MakePublisher();
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(1000); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  Drain(d);
  EXPECT_EQ(
      Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT' AND sent_at IS NOT NULL"),
      "60");
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.msg", 60, seconds(10));
  ASSERT_EQ(got.size(), 60u);
  std::map<std::string, int> last_version;
  std::set<std::string> ids;
  for (const auto& m : got) {
    int v = std::stoi(m.value.substr(5));
    EXPECT_GT(v, last_version[m.key]) << m.key;
    last_version[m.key] = v;
    ids.insert(m.headers.at("msgx-event-id"));
    EXPECT_EQ(m.headers.at("msgx-mailbox-id"), std::to_string(1000 + v));
    EXPECT_EQ(m.headers.at("msgx-type"), "UPSERT");
    EXPECT_EQ(m.headers.count("msgx-replay"), 0u);
  }
  EXPECT_EQ(ids.size(), 60u);
}

TEST_F(DispatcherTest, NothingIsPublishedBeyondTheMirrorOffset) {
  InsertEvent("KAFKA:msg", "F1", 5, "{\"v\":5}");
  InsertEvent("KAFKA:msg", "F1", 15, "{\"v\":15}");
  std::atomic<std::int64_t> mirror{-1};
  auto pub = MakePublisher();
  Dispatcher d(
      session_.get(), pub.get(), [&] { return Result<std::int64_t>(mirror.load()); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  auto s = d.Step();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, DispatchStep::Kind::kGated);  // the mirror holds nothing yet
  mirror = 10;
  auto steps = Drain(d);
  EXPECT_EQ(steps.back().kind, DispatchStep::Kind::kGated);
  EXPECT_EQ(Query("SELECT string_agg(state, ',' ORDER BY event_id) FROM msg_event_state"),
            "SENT,PENDING");
  mirror = 15;
  Drain(d);
  EXPECT_EQ(Query("SELECT string_agg(state, ',' ORDER BY event_id) FROM msg_event_state"),
            "SENT,SENT");
}

TEST_F(DispatcherTest, OutageChargesNothingAndDeliveryResumes) {
  for (int v = 1; v <= 5; ++v)
    InsertEvent("KAFKA:msg", "F1", v, "{\"v\":" + std::to_string(v) + "}");
  auto real = MakePublisher();
  kafka_->SetBrokerDown();
  Dispatcher d(
      session_.get(), real.get(), [] { return Result<std::int64_t>(100); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  auto s = d.Step();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, DispatchStep::Kind::kStalled);
  EXPECT_TRUE(d.stalled());
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE attempts > 0 OR state <> 'PENDING'"),
            "0");
  kafka_->SetBrokerUp();
  for (int i = 0; i < 10 && Query("SELECT count(*) FROM msg_event_state WHERE state='SENT'") != "5";
       ++i) {
    ASSERT_TRUE(d.Step().ok());
  }
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "5");
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'DEAD'"), "0");
  EXPECT_FALSE(d.stalled());
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.msg", 5, seconds(5));
  ASSERT_EQ(got.size(), 5u);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(got[i].value, "{\"v\":" + std::to_string(i + 1) + "}");
}

TEST_F(DispatcherTest, PermanentErrorChargesOnlyTheCulpritThenDlqAndReplay) {
  InsertEvent("KAFKA:msg", "F1", 1, "{\"v\":1}");
  InsertEvent("KAFKA:msg", "F2", 2, "{\"v\":2,\"pad\":\"" + std::string(3000, 'x') + "\"}");
  InsertEvent("KAFKA:msg", "F1", 3, "{\"v\":3}");
  auto pub = MakePublisher({{"message.max.bytes", "2000"}});
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  auto s = d.Step();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, DispatchStep::Kind::kCharged);
  EXPECT_EQ(s->sent, 1);  // event 1 went alone before the culprit
  EXPECT_EQ(Query("SELECT string_agg(state || '/' || attempts, ',' ORDER BY event_id) FROM "
                  "msg_event_state"),
            "SENT/1,PENDING/1,PENDING/0");
  // The culprit holds the head while it backs off: event 3 does not overtake.
  s = d.Step();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, DispatchStep::Kind::kWaitingHead);
  for (int attempt = 2; attempt <= 3; ++attempt) {
    clock_.Advance(std::chrono::minutes(2));
    s = d.Step();
    ASSERT_TRUE(s.ok());
    EXPECT_EQ(s->kind, DispatchStep::Kind::kCharged);
  }
  EXPECT_EQ(d.dead_total(), 1);
  EXPECT_EQ(Query("SELECT state || '/' || error_class FROM msg_event_state WHERE event_id = 2"),
            "DEAD/KAFKA_PERMANENT");
  Drain(d);  // event 3 now goes
  EXPECT_EQ(Query("SELECT string_agg(state, ',' ORDER BY event_id) FROM msg_event_state"),
            "SENT,DEAD,SENT");

  // An operator replays the DEAD event; with the limit lifted it is delivered, marked.
  auto replayed = ReplayDeadEvents(session_.get(), {2}, clock_.NowMicros());
  ASSERT_TRUE(replayed.ok());
  EXPECT_EQ(*replayed, 1);
  EXPECT_EQ(
      Query(
          "SELECT state || '/' || attempts || '/' || (last_error IS NOT NULL) FROM msg_event_state "
          "WHERE event_id = 2"),
      "PENDING/0/true");
  auto big = MakePublisher({{"message.max.bytes", "100000"}});
  Dispatcher d2(
      session_.get(), big.get(), [] { return Result<std::int64_t>(100); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  Drain(d2);
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.msg", 3, seconds(10));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].value, "{\"v\":1}");
  EXPECT_EQ(got[1].value, "{\"v\":3}");
  EXPECT_EQ(got[2].headers.at("msgx-replay"), "1");
  EXPECT_EQ(got[2].headers.at("msgx-event-id"), "KAFKA:msg:2:0");
}

// Kafka's ApiKey of a Produce request (rdkafka_proto.h is not installed).
constexpr int16_t kProduceApiKey = 0;

// The same with the broker's own answer: a permanent produce error injected
// with rd_kafka_mock_broker_push_request_error_rtts on the broker that leads
// t.msg (the progress topic is led by the other one: its record is not the
// culprit, and a refused progress record is an outage). The whole request fails; the
// dispatcher resends one at a time, so only the event the broker keeps
// refusing is charged, up to max-attempts and the DLQ; the events behind it
// keep their order.
TEST_F(DispatcherTest, BrokerInjectedPermanentErrorDeadsOnlyTheCulprit) {
  for (int v = 1; v <= 4; ++v)
    InsertEvent("KAFKA:msg", v % 2 ? "F1" : "F2", v, "{\"v\":" + std::to_string(v) + "}");
  kafka_ = testing::KafkaMock::Start(2);
  kafka_->CreateTopic("t.msg", 1);
  kafka_->CreateTopic("t.progress", 1);
  rd_kafka_mock_partition_set_leader(kafka_->cluster(), "t.msg", 0, 1);
  rd_kafka_mock_partition_set_leader(kafka_->cluster(), "t.progress", 0, 2);
  // linger.ms: the four events leave in one Produce request.
  auto pub = MakePublisher({{"linger.ms", "200"}});
  // Enough refusals for max_attempts (3) attempts. Each attempt used two
  // injected errors in our runs (librdkafka 2.0 against its mock), so six;
  // a seventh would be charged to event 2 and fail the test.
  constexpr auto kInvalid = RD_KAFKA_RESP_ERR_INVALID_RECORD;
  rd_kafka_mock_broker_push_request_error_rtts(kafka_->cluster(), 1, kProduceApiKey, 6, kInvalid, 0,
                                               kInvalid, 0, kInvalid, 0, kInvalid, 0, kInvalid, 0,
                                               kInvalid, 0);
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  for (int i = 0; i < 12 && d.dead_total() == 0; ++i) {
    auto s = d.Step();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    if (s->kind == DispatchStep::Kind::kWaitingHead) clock_.Advance(std::chrono::minutes(2));
    ASSERT_NE(s->kind, DispatchStep::Kind::kStalled) << s->error;
  }
  EXPECT_EQ(d.dead_total(), 1);
  EXPECT_EQ(Query("SELECT string_agg(state || '/' || attempts, ',' ORDER BY event_id) FROM "
                  "msg_event"),
            "DEAD/3,PENDING/0,PENDING/0,PENDING/0");
  Drain(d);
  EXPECT_EQ(Query("SELECT string_agg(state, ',' ORDER BY event_id) FROM msg_event_state"),
            "DEAD,SENT,SENT,SENT");
  ASSERT_EQ(*ReplayDeadEvents(session_.get(), {1}, clock_.NowMicros()), 1);
  Drain(d);
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.msg", 4, seconds(10));
  ASSERT_EQ(got.size(), 4u);
  EXPECT_EQ(got[0].value, "{\"v\":2}");
  EXPECT_EQ(got[1].value, "{\"v\":3}");
  EXPECT_EQ(got[2].value, "{\"v\":4}");
  EXPECT_EQ(got[3].value, "{\"v\":1}");
  EXPECT_EQ(got[3].headers.at("msgx-replay"), "1");
}

// Transient errors in the middle of a stream (not enough replicas, leader
// moving) are outages: nothing is charged and no key is reordered.
TEST_F(DispatcherTest, TransientErrorsMidStreamKeepPerKeyOrder) {
  InsertMsgEvents(30);
  auto pub = MakePublisher();
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.claim_limit = 7;
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_, o);
  ASSERT_EQ(Drain(d, 1).at(0).kind, DispatchStep::Kind::kSent);  // the first 7
  rd_kafka_mock_push_request_errors(
      kafka_->cluster(), kProduceApiKey, 3, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
      RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT);
  for (int i = 0;
       i < 40 && Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'") != "30"; ++i) {
    auto s = d.Step();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "30");
  // attempts counts sends: 1 each, nothing charged.
  EXPECT_EQ(
      Query("SELECT count(*) FROM msg_event_state WHERE attempts <> 1 OR error_class IS NOT NULL"),
      "0");
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.msg", 30, seconds(10));
  std::map<std::string, int> last;
  std::set<std::string> ids;
  for (const auto& m : got) {
    const int v = std::stoi(m.value.substr(5));
    EXPECT_GT(v, last[m.key]) << m.key;
    last[m.key] = v;
    ids.insert(m.headers.at("msgx-event-id"));
  }
  EXPECT_EQ(ids.size(), 30u);
}

TEST_F(DispatcherTest, ScheduleBatchKeepsLatestPerFlidAndWaitsForThePeriod) {
  InsertEvent("KAFKA:schd", "A", 1, "{\"flid\":\"A\",\"v\":1}");
  InsertEvent("KAFKA:schd", "B", 2, "{\"flid\":\"B\",\"v\":2}");
  InsertEvent("KAFKA:schd", "A", 3, "{\"flid\":\"A\",\"v\":3}");
  auto pub = MakePublisher();
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_,
      Options("KAFKA:schd", "t.schd"));
  auto s = d.Step();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, DispatchStep::Kind::kBatching);
  clock_.Advance(seconds(3));
  s = d.Step();
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->kind, DispatchStep::Kind::kSent);
  EXPECT_EQ(s->sent, 3);
  EXPECT_EQ(Query("SELECT count(DISTINCT batch_id) || '/' || min(batch_id) FROM msg_event_state"),
            "1/1");
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.schd", 1, seconds(10));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key, "schedule");
  EXPECT_EQ(got[0].value, "[{\"flid\":\"B\",\"v\":2},{\"flid\":\"A\",\"v\":3}]");
  EXPECT_EQ(got[0].headers.at("msgx-event-id"), "schd-batch:1");
}

TEST_F(DispatcherTest, FailedScheduleFlushIsRetriedWithTheSameMembership) {
  InsertEvent("KAFKA:schd", "A", 1, "{\"v\":1}");
  InsertEvent("KAFKA:schd", "B", 2, "{\"v\":2}");
  auto real = MakePublisher();
  SwitchablePublisher pub(real.get());
  pub.outage = true;
  DispatcherOptions o = Options("KAFKA:schd", "t.schd");
  o.flush_limit = 2;  // full at once
  Dispatcher d(
      session_.get(), &pub, [] { return Result<std::int64_t>(100); }, &clock_, o);
  auto s = d.Step();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, DispatchStep::Kind::kStalled);
  EXPECT_EQ(Query("SELECT string_agg(coalesce(batch_id::text, '-'), ',' ORDER BY event_id) FROM "
                  "msg_event_state"),
            "1,1");
  InsertEvent("KAFKA:schd", "C", 3, "{\"v\":3}");  // arrives meanwhile
  pub.outage = false;
  s = d.Step();
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->kind, DispatchStep::Kind::kSent);
  EXPECT_EQ(s->sent, 2);
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.schd", 1, seconds(10));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].value, "[{\"v\":1},{\"v\":2}]");  // exactly the original members
  EXPECT_EQ(Query("SELECT string_agg(state || '/' || coalesce(batch_id::text, '-'), ',' ORDER BY "
                  "event_id) FROM msg_event_state"),
            "SENT/1,SENT/1,PENDING/-");
}

TEST_F(DispatcherTest, OversizedScheduleBatchIsSplitByTheByteCap) {
  for (int v = 1; v <= 6; ++v) {
    InsertEvent("KAFKA:schd", "F" + std::to_string(v), v,
                "{\"v\":" + std::to_string(v) + ",\"pad\":\"" + std::string(90, 'x') + "\"}");
  }
  auto pub = MakePublisher();
  DispatcherOptions o = Options("KAFKA:schd", "t.schd");
  o.max_batch_bytes = 250;  // two ~100-byte payloads per batch
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_, o);
  auto steps = Drain(d);
  // Two full batches go at once; the remainder waits for the flush period.
  EXPECT_EQ(steps.back().kind, DispatchStep::Kind::kBatching);
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "4");
  clock_.Advance(seconds(3));
  Drain(d);
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "6");
  EXPECT_EQ(Query("SELECT count(DISTINCT batch_id) FROM msg_event_state"), "3");
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'DEAD'"), "0");
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.schd", 3, seconds(10));
  ASSERT_EQ(got.size(), 3u);
  for (const auto& m : got) EXPECT_LE(m.value.size(), 250u);
}

// A fenced dispatcher writes msg_event only under the current epoch: once
// another process has taken a newer one, nothing this one marks lands, and
// without an epoch it does not even publish.
TEST_F(DispatcherTest, AStaleLeadersWritesDoNotLand) {
  PgLeadership lead(url_, "log-A");
  auto a = lead.TryAcquire();
  ASSERT_TRUE(a.ok() && a->leader) << (a.ok() ? a->holder : a.status().ToString());
  for (int v = 1; v <= 3; ++v)
    InsertEvent("KAFKA:msg", "F1", v, "{\"v\":" + std::to_string(v) + "}");
  auto real = MakePublisher();
  SwitchablePublisher counting(real.get());
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.log_uuid = "log-A";
  Dispatcher d(
      session_.get(), &counting, [] { return Result<std::int64_t>(100); }, &clock_, o);
  auto idle = d.Step();  // no epoch yet: not leader, nothing published
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->kind, DispatchStep::Kind::kStalled);
  EXPECT_EQ(idle->error, "not leader");
  EXPECT_EQ(counting.calls, 0);
  d.set_epoch(a->epoch);
  auto sent = d.Step();
  ASSERT_TRUE(sent.ok());
  ASSERT_EQ(sent->kind, DispatchStep::Kind::kSent) << sent->error;
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "3");

  // Another process leads now (a newer epoch); this one has not noticed.
  Query("UPDATE pipeline SET leader_epoch = leader_epoch + 1");
  for (int v = 4; v <= 5; ++v)
    InsertEvent("KAFKA:msg", "F1", v, "{\"v\":" + std::to_string(v) + "}");
  auto stale = d.Step();
  ASSERT_TRUE(stale.ok());
  EXPECT_EQ(stale->kind, DispatchStep::Kind::kStalled);
  EXPECT_NE(stale->error.find("stale epoch"), std::string::npos) << stale->error;
  EXPECT_EQ(counting.calls, 1) << "a stale leader loads, so publishes, nothing";
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "3");
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'PENDING' AND attempts = 0"),
            "2");
}

// Terminates every PostgreSQL connection of the test database but psql's
// right after the first `arm` committed publishes: the batch is in Kafka, and
// the dispatcher's SENT update meets a dead connection.
class ConnectionKillingPublisher final : public Publisher {
 public:
  ConnectionKillingPublisher(Publisher* real, std::function<void()> kill)
      : real_(real), kill_(std::move(kill)) {}
  PublishResult Publish(std::span<const OutgoingMessage> batch) override {
    PublishResult r = real_->Publish(batch);
    if (r.committed && arm > 0) {
      --arm;
      kill_();
    }
    return r;
  }
  Status Prepare() override { return real_->Prepare(); }
  Result<std::optional<std::string>> ReadProgress(const std::string& topic,
                                                  const std::string& key) override {
    return real_->ReadProgress(topic, key);
  }
  int arm = 1;

 private:
  Publisher* real_;
  std::function<void()> kill_;
};

// Each msgx-event-id of `got` and how often it came.
std::map<std::string, int> IdCounts(const std::vector<testing::ConsumedMessage>& got) {
  std::map<std::string, int> n;
  for (const auto& m : got) ++n[m.headers.at("msgx-event-id")];
  return n;
}

// t.msg holds `n` records, each event once (it waits 3 s for one more).
void ExpectEachEventOnce(const std::string& bootstrap, size_t n) {
  auto got = testing::ConsumeTopic(bootstrap, "t.msg", n + 1, seconds(3));
  EXPECT_EQ(got.size(), n);
  const auto ids = IdCounts(got);
  EXPECT_EQ(ids.size(), n);
  for (const auto& [id, count] : ids) EXPECT_EQ(count, 1) << id;
}

// t.msg holds `n` records, each event once, and each key's versions in
// increasing order (values {"v":N}).
void ExpectEachEventOnceInOrderPerKey(const std::string& bootstrap, size_t n) {
  auto got = testing::ConsumeTopic(bootstrap, "t.msg", n + 1, seconds(3));
  EXPECT_EQ(got.size(), n);
  for (const auto& [id, count] : IdCounts(got)) EXPECT_EQ(count, 1) << id;
  std::map<std::string, int> last_version;
  for (const auto& m : got) {
    const int v = std::stoi(m.value.substr(5));
    EXPECT_GT(v, last_version[m.key]) << m.key;
    last_version[m.key] = v;
  }
}

// Issue 20: a committed batch whose SENT update is lost (every connection
// terminated between the Kafka commit and the UPDATE) is not sent again:
// the dispatcher reconciles with the progress record and marks it SENT.
// A step that sent every event its head read held, fewer than the claim
// limit, says the outbox is drained (the service then waits for a wake
// instead of reading again); a full batch, or one the mirror gate cut
// short, does not.
TEST_F(DispatcherTest, AStepSaysDrainedOnlyWhenItSentAShortHeadWhole) {
  InsertMsgEvents(7);  // state versions 1..7
  auto pub = MakePublisher();
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.claim_limit = 4;
  std::int64_t mirrored = 5;
  Dispatcher d(
      session_.get(), pub.get(), [&] { return Result<std::int64_t>(mirrored); }, &clock_, o);
  auto full = d.Step();
  ASSERT_TRUE(full.ok()) << full.status().ToString();
  EXPECT_EQ(full->sent, 4);
  EXPECT_FALSE(full->drained) << "a full batch: more may wait";
  auto gated = d.Step();  // 5 goes; 6 and 7 are not mirrored yet
  ASSERT_TRUE(gated.ok()) << gated.status().ToString();
  EXPECT_EQ(gated->sent, 1);
  EXPECT_FALSE(gated->drained) << "the gate held events back";
  mirrored = 7;
  auto rest = d.Step();
  ASSERT_TRUE(rest.ok()) << rest.status().ToString();
  EXPECT_EQ(rest->kind, DispatchStep::Kind::kSent);
  EXPECT_EQ(rest->sent, 2);
  EXPECT_TRUE(rest->drained);
  auto idle = d.Step();
  ASSERT_TRUE(idle.ok());
  EXPECT_EQ(idle->kind, DispatchStep::Kind::kIdle);
  ExpectEachEventOnce(kafka_->Bootstrap(), 7);
}

// The first batch goes through, so that the connection of the SENT
// updates is open when the second one's is terminated.
TEST_F(DispatcherTest, ACommittedBatchWhoseSentUpdateIsLostIsNotSentAgain) {
  InsertMsgEvents(10);
  auto real = MakePublisher();
  ConnectionKillingPublisher pub(real.get(), [this] { TerminateConnections(); });
  pub.arm = 0;
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.claim_limit = 4;
  Dispatcher d(
      session_.get(), &pub, [] { return Result<std::int64_t>(100); }, &clock_, o);
  auto first = d.Step();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_EQ(first->kind, DispatchStep::Kind::kSent);
  pub.arm = 1;
  auto lost = d.Step();
  ASSERT_TRUE(lost.ok()) << lost.status().ToString();
  EXPECT_EQ(lost->kind, DispatchStep::Kind::kStalled) << "the SENT update met a dead connection";
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "4");
  // The reconcile says which events it took from Kafka's word, at warn:
  // the level msgx runs at in the crash loops, whose Kafka check reads the
  // range (tests/support/kafka_check.cc, ReconciledRanges).
  ASSERT_TRUE(InitLogging("warn").ok());
  ::testing::internal::CaptureStderr();
  ASSERT_NO_FATAL_FAILURE(StepUntilSent(d, 10));
  const std::string logged = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(InitLogging("info").ok());  // the default, as the other tests found it
  EXPECT_NE(logged.find(R"("level":"warn","component":"dispatch","msg":"KAFKA:msg: 4 events )"
                        R"(already in Kafka)"),
            std::string::npos)
      << logged;
  EXPECT_NE(logged.find("marked SENT without a send: event_id 5..8"), std::string::npos) << logged;
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "10");
  EXPECT_EQ(d.reconciled_total(), 4) << "the second batch was found in Kafka";
  ExpectEachEventOnce(kafka_->Bootstrap(), 10);
}

// The same with the SENT update overlapping the next batch, as in the
// service: the lost update is found when the next step waits for it, after
// that step's batch is committed; both batches are marked from the
// progress record and nothing is sent twice.
TEST_F(DispatcherTest, AnOverlappedSentUpdateThatIsLostSendsNothingTwice) {
  InsertMsgEvents(12);
  auto real = MakePublisher();
  ConnectionKillingPublisher pub(real.get(), [this] { TerminateConnections(); });
  pub.arm = 0;
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.claim_limit = 4;
  o.overlap_sent_update = true;
  Dispatcher d(
      session_.get(), &pub, [] { return Result<std::int64_t>(100); }, &clock_, o);
  ASSERT_TRUE(d.Step().ok());
  pub.arm = 1;
  ASSERT_NO_FATAL_FAILURE(StepUntilSent(d, 12));
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "12");
  EXPECT_GE(d.reconciled_total(), 4) << "the batch whose update was lost was found in Kafka";
  ExpectEachEventOnce(kafka_->Bootstrap(), 12);
}

// The SENT update of a batch overlaps the next batch: held up by a row
// lock, it does not hold the next batch back, and the next head leaves its
// events out (none is found already delivered and marked a second way).
TEST_F(DispatcherTest, TheNextBatchIsSentWhileTheLastOnesSentUpdateRuns) {
  InsertMsgEvents(8);
  auto pub = MakePublisher();
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.claim_limit = 4;
  o.overlap_sent_update = true;
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_, o);
  // Another transaction locks the delivered ranges against writes (reads go
  // on): the first batch's update waits for it.
  pqxx::connection locker(url_);
  pqxx::work lock(locker);
  lock.exec("LOCK TABLE outbox_delivery IN EXCLUSIVE MODE");
  std::atomic<bool> second_done{false};
  Result<DispatchStep> first = Status::Internal("not run");
  Result<DispatchStep> second = Status::Internal("not run");
  std::thread stepper([&] {
    first = d.Step();   // sends 1..4; their update waits for the lock
    second = d.Step();  // sends 5..8, then waits for the first update
    second_done = true;
  });
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.msg", 8, seconds(10));
  EXPECT_EQ(got.size(), 8u) << "the second batch went out while the first update waited";
  EXPECT_FALSE(second_done) << "the second step waits for the first batch's update";
  lock.abort();
  stepper.join();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(first->kind, DispatchStep::Kind::kSent);
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  EXPECT_EQ(second->kind, DispatchStep::Kind::kSent);
  EXPECT_EQ(second->sent, 4);
  Drain(d);
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "8");
  EXPECT_EQ(d.reconciled_total(), 0);
  EXPECT_EQ(d.sent_total(), 8);
}

// Issue 20: the outbox's SENT marks lost, as in a PostgreSQL restored to an
// earlier point and applied again (the same event keys, new event ids): a
// restarted dispatcher sends only what Kafka does not hold yet.
TEST_F(DispatcherTest, LostSentMarksAfterARestoreSendNothingAgain) {
  for (int v = 1; v <= 6; ++v)
    InsertEvent("KAFKA:msg", "F" + std::to_string(v % 2), v, "{\"v\":" + std::to_string(v) + "}");
  {
    auto pub = MakePublisher();
    Dispatcher d(
        session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_,
        Options("KAFKA:msg", "t.msg"));
    Drain(d);
    ASSERT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "6");
  }
  // The restore: the rows come back PENDING under new event ids, then two
  // events the first run never saw.
  Query("DELETE FROM msg_event");
  for (int v = 1; v <= 8; ++v)
    InsertEvent("KAFKA:msg", "F" + std::to_string(v % 2), v, "{\"v\":" + std::to_string(v) + "}");
  ASSERT_EQ(Query("SELECT min(event_id) FROM msg_event_state"), "7");
  auto pub = MakePublisher();
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  Drain(d);
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "8");
  EXPECT_EQ(d.reconciled_total(), 6);
  EXPECT_EQ(d.sent_total(), 2);
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.msg", 9, seconds(3));
  ASSERT_EQ(got.size(), 8u);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(got[i].value, "{\"v\":" + std::to_string(i + 1) + "}");
}

// Issue 20: a replay of a DEAD event is delivered although the high-water
// has passed it, and it does not move the high-water back: the progress
// record still names the newest event.
TEST_F(DispatcherTest, AReplayedDeadEventIsDeliveredAfterTheHighWaterPassedIt) {
  for (int v = 1; v <= 3; ++v)
    InsertEvent("KAFKA:msg", "F1", v, "{\"v\":" + std::to_string(v) + "}");
  Query("UPDATE msg_event SET state = 'DEAD', attempts = 3 WHERE state_version = 1");
  {
    auto pub = MakePublisher();
    Dispatcher d(
        session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_,
        Options("KAFKA:msg", "t.msg"));
    Drain(d);
  }
  ASSERT_EQ(*ReplayDeadEvents(session_.get(), {1}, clock_.NowMicros()), 1);
  // A restart: the new dispatcher learns the high-water (event 3) first.
  auto pub = MakePublisher();
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  Drain(d);
  EXPECT_EQ(Query("SELECT string_agg(state, ',' ORDER BY event_id) FROM msg_event_state"),
            "SENT,SENT,SENT");
  // The replay below the delivered range was read from under it and is
  // marked on its row; the range's rows are not rewritten.
  EXPECT_EQ(Query("SELECT string_agg(state, ',' ORDER BY event_id) FROM msg_event"),
            "SENT,PENDING,PENDING");
  EXPECT_EQ(Query("SELECT string_agg(first_event_id || '..' || last_event_id, ',') FROM "
                  "outbox_delivery"),
            "2..3");
  EXPECT_EQ(d.reconciled_total(), 0);
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.msg", 4, seconds(3));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[2].value, "{\"v\":1}");
  EXPECT_EQ(got[2].headers.at("msgx-replay"), "1");
  auto progress =
      pub->ReadProgress("t.progress", DispatcherOptions::ProgressKey("log-test", "KAFKA:msg"));
  ASSERT_TRUE(progress.ok()) << progress.status().ToString();
  EXPECT_EQ(progress->value_or("none"), "3:3:0");
}

// A drain of full batches reads each next head while the batch before it is
// in Kafka (docs/dispatch.md#the-next-head-is-read-while-a-batch-is-in-kafka):
// the heads come from the read-ahead, each batch is the prefix that follows
// the one before, and every event reaches Kafka once, in order.
TEST_F(DispatcherTest, ADrainReadsEachHeadWhileTheBatchBeforeItIsInKafka) {
  InsertMsgEvents(23);
  auto pub = MakePublisher();
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.claim_limit = 4;
  o.overlap_sent_update = true;
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(100); }, &clock_, o);
  Drain(d);
  EXPECT_EQ(d.prefetched_heads(), 5) << "every head after the first full batch";
  EXPECT_EQ(Query("SELECT string_agg(first_event_id || '..' || last_event_id, ',' ORDER BY "
                  "last_event_id) FROM outbox_delivery"),
            "1..4,5..8,9..12,13..16,17..20,21..23");
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "23");
  EXPECT_EQ(d.reconciled_total(), 0);
  ExpectEachEventOnceInOrderPerKey(kafka_->Bootstrap(), 23);
}

// A publish that does not commit throws the head read ahead of it away: the
// next step reads the head again, so the event charged with a permanent
// error stays the head, and nothing overtakes it. (An outage makes a
// reconcile due, which reads the head again too.)
TEST_F(DispatcherTest, AFailedPublishDropsTheHeadReadAhead) {
  InsertMsgEvents(12);
  auto real = MakePublisher();
  RefusingPublisher pub(real.get(), "{\"v\":5}");
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.claim_limit = 4;
  Dispatcher d(
      session_.get(), &pub, [] { return Result<std::int64_t>(100); }, &clock_, o);
  auto first = d.Step();  // 1..4, reading 5.. ahead
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->sent, 4);
  auto charged = d.Step();  // 5..8 from the read-ahead, reading 9.. ahead; 5 is refused
  ASSERT_TRUE(charged.ok());
  EXPECT_EQ(charged->kind, DispatchStep::Kind::kCharged);
  pub.refuse = false;
  auto waiting = d.Step();
  ASSERT_TRUE(waiting.ok());
  EXPECT_EQ(waiting->kind, DispatchStep::Kind::kWaitingHead) << "5 waits for its backoff";
  clock_.Advance(std::chrono::minutes(2));
  Drain(d);
  EXPECT_EQ(d.prefetched_heads(), 3) << "5.., then 9.. and the empty head after 5..8 again";
  EXPECT_EQ(Query("SELECT string_agg(first_event_id || '..' || last_event_id, ',' ORDER BY "
                  "last_event_id) FROM outbox_delivery"),
            "1..4,5..8,9..12");
  ExpectEachEventOnceInOrderPerKey(kafka_->Bootstrap(), 12);
}

// Issue 20: a KAFKA:schd batch committed but not marked is the same message,
// sent once: the open batch is marked whole at reconcile.
TEST_F(DispatcherTest, ACommittedScheduleBatchIsNotSentAgain) {
  InsertEvent("KAFKA:schd", "A", 1, "{\"v\":1}");
  InsertEvent("KAFKA:schd", "B", 2, "{\"v\":2}");
  auto real = MakePublisher();
  ConnectionKillingPublisher pub(real.get(), [this] { TerminateConnections(); });
  DispatcherOptions o = Options("KAFKA:schd", "t.schd");
  o.flush_limit = 2;
  Dispatcher d(
      session_.get(), &pub, [] { return Result<std::int64_t>(100); }, &clock_, o);
  auto lost = d.Step();
  ASSERT_TRUE(lost.ok());
  EXPECT_EQ(lost->kind, DispatchStep::Kind::kStalled);
  for (int i = 0;
       i < 10 && Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'") != "2"; ++i) {
    ASSERT_TRUE(d.Step().ok());
  }
  EXPECT_EQ(Query("SELECT string_agg(state || '/' || batch_id, ',' ORDER BY event_id) FROM "
                  "msg_event_state"),
            "SENT/1,SENT/1");
  EXPECT_EQ(d.reconciled_total(), 2);
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.schd", 2, seconds(3));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].headers.at("msgx-event-id"), "schd-batch:1");
}

// Wraps a real publisher: writes each call into `calls` ("prepare", "read",
// "publish", "commit" for a committed publish) and runs `after_commit`
// right after the `commit_to_hook`-th committed publish (1-based; 0: never),
// before the dispatcher gets to mark the batch SENT.
class HookedPublisher final : public Publisher {
 public:
  HookedPublisher(Publisher* real, std::vector<std::string>* calls) : real_(real), calls_(calls) {}
  PublishResult Publish(std::span<const OutgoingMessage> batch) override {
    calls_->push_back("publish");
    PublishResult r = real_->Publish(batch);
    if (r.committed) {
      calls_->push_back("commit");
      if (++commits_ == commit_to_hook && after_commit) after_commit();
    }
    return r;
  }
  Status Prepare() override {
    calls_->push_back("prepare");
    return real_->Prepare();
  }
  Result<std::optional<std::string>> ReadProgress(const std::string& topic,
                                                  const std::string& key) override {
    calls_->push_back("read");
    return real_->ReadProgress(topic, key);
  }
  int commit_to_hook = 0;
  std::function<void()> after_commit;

 private:
  Publisher* real_;
  std::vector<std::string>* calls_;
  int commits_ = 0;
};

// Moves the leadership from `from` to `to` as a dying leader's closed
// session does: the lock is free once PostgreSQL has ended the backend, so
// `to` tries again (each try is a round trip) for at most 10 s. Returns the
// new epoch, 0 when `to` did not get it.
std::int64_t HandOver(PgLeadership& from, PgLeadership& to) {
  from.Release();
  const auto deadline = std::chrono::steady_clock::now() + seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    auto r = to.TryAcquire();
    if (!r.ok()) {
      ADD_FAILURE() << r.status().ToString();
      return 0;
    }
    if (r->leader) return r->epoch;
  }
  ADD_FAILURE() << "the leadership did not move within 10 s";
  return 0;
}

// Issue 20: leader changes mid-stream, each right after the old leader's
// Kafka commit and before its SENT update (which the new epoch then fences
// off), with one transactional id for both, as in the service. A delivers a
// batch; B takes over (epoch 2), reconciles with the progress record and
// delivers one; B's next batch commits and A leads again (epoch 3): A has
// nothing pending of its own to settle, and must read the progress before it
// sends anything; its next batch commits and B leads again (epoch 4) and
// delivers the rest. A read_committed consumer sees every event once, in
// order per key. (librdkafka's mock does not fence the former leader's
// producer when the other one runs init_transactions with the same id: A's
// next transaction commits. So here only the epoch change makes A reconcile;
// without it A sends B's committed batch again.)
TEST_F(DispatcherTest, ALeaderChangeAfterAKafkaCommitSendsNothingTwice) {
  const int kEvents = 24;  // six batches of four
  InsertMsgEvents(kEvents);
  PgLeadership lead_a(url_, "log-A");
  PgLeadership lead_b(url_, "log-A");
  auto first = lead_a.TryAcquire();
  ASSERT_TRUE(first.ok() && first->leader) << (first.ok() ? first->holder : "");
  DispatcherOptions o = Options("KAFKA:msg", "t.msg");
  o.log_uuid = "log-A";
  o.claim_limit = 4;
  auto real_a = MakePublisher();  // the same transactional id for both
  auto real_b = MakePublisher();
  std::vector<std::string> calls_a;
  std::vector<std::string> calls_b;
  HookedPublisher pub_a(real_a.get(), &calls_a);
  HookedPublisher pub_b(real_b.get(), &calls_b);
  auto mirror = [] { return Result<std::int64_t>(100); };
  Dispatcher a(session_.get(), &pub_a, mirror, &clock_, o);
  PgSession session_b(url_);
  Dispatcher b(&session_b, &pub_b, mirror, &clock_, o);
  auto sent = [&] { return Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"); };

  a.set_epoch(first->epoch);
  auto one = a.Step();
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  ASSERT_EQ(one->kind, DispatchStep::Kind::kSent) << one->error;
  ASSERT_EQ(sent(), "4");

  // A's leadership ends between steps: B leads with epoch 2.
  const std::int64_t epoch_b = HandOver(lead_a, lead_b);
  ASSERT_EQ(epoch_b, 2);
  b.set_epoch(epoch_b);
  pub_b.commit_to_hook = 2;  // B's second batch: A leads again before B marks it
  std::int64_t epoch_a = 0;
  pub_b.after_commit = [&] {
    epoch_a = HandOver(lead_b, lead_a);
    a.set_epoch(epoch_a);
  };
  auto two = b.Step();
  ASSERT_TRUE(two.ok()) << two.status().ToString();
  ASSERT_EQ(two->kind, DispatchStep::Kind::kSent) << two->error;
  EXPECT_EQ(b.reconciled_total(), 0);
  EXPECT_EQ(calls_b.front(), "prepare") << "B read the progress before its first send";
  auto three = b.Step();
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(three->kind, DispatchStep::Kind::kStalled) << "B's SENT update is fenced off";
  ASSERT_EQ(epoch_a, 3);
  ASSERT_EQ(sent(), "8") << "events 9-12 are in Kafka, not marked";

  // A leads again. Its own last step went well, so only the epoch tells it
  // that someone else may have delivered meanwhile.
  calls_a.clear();
  pub_a.commit_to_hook = 2;  // A's next commit: B leads again before A marks it
  std::int64_t epoch_b2 = 0;
  pub_a.after_commit = [&] {
    epoch_b2 = HandOver(lead_a, lead_b);
    b.set_epoch(epoch_b2);
  };
  auto four = a.Step();
  ASSERT_TRUE(four.ok()) << four.status().ToString();
  ASSERT_FALSE(calls_a.empty());
  EXPECT_EQ(calls_a.front(), "prepare") << "A sent before it read the progress after the change";
  EXPECT_EQ(a.reconciled_total(), 4) << "B's committed batch found in Kafka";
  for (int i = 0; i < 5 && epoch_b2 == 0; ++i) {
    auto s = a.Step();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  ASSERT_EQ(epoch_b2, 4) << "A committed a batch";
  auto fenced = a.Step();
  ASSERT_TRUE(fenced.ok());
  EXPECT_EQ(fenced->kind, DispatchStep::Kind::kStalled) << "A is stale now";

  // B leads again and delivers the rest.
  for (int i = 0; i < 20 && sent() != std::to_string(kEvents); ++i) {
    auto s = b.Step();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
  }
  EXPECT_EQ(sent(), std::to_string(kEvents));
  EXPECT_EQ(b.reconciled_total(), 4) << "A's committed batch found in Kafka";
  EXPECT_EQ(a.reconciled_total() + b.reconciled_total() + a.sent_total() + b.sent_total(), kEvents);

  ExpectEachEventOnceInOrderPerKey(kafka_->Bootstrap(), kEvents);
}

// Issue 20: while the progress cannot be read (the broker down), nothing is
// sent and nothing is charged; it is this stage's outage only.
TEST_F(DispatcherTest, NothingIsSentWhileTheProgressCannotBeRead) {
  InsertEvent("KAFKA:msg", "F1", 1, "{\"v\":1}");
  auto real = MakePublisher();
  SwitchablePublisher pub(real.get());
  pub.progress_outage = true;
  Dispatcher d(
      session_.get(), &pub, [] { return Result<std::int64_t>(100); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  auto s = d.Step();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->kind, DispatchStep::Kind::kStalled);
  EXPECT_EQ(pub.calls, 0) << "no publish before the progress is known";
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE attempts > 0 OR state <> 'PENDING'"),
            "0");
  pub.progress_outage = false;
  Drain(d);
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "1");
}

// The head, open-batch and count queries read only their target's
// undelivered (or DEAD) rows, through V6's partial indexes from the
// delivered position up (V8), even when PostgreSQL plans
// them with the statistics of an outbox that was all PENDING (analysed
// after a backlog was loaded, before most of it was sent): then it walked
// msg_event_pkey past every SENT event, batch after batch, and counted
// with a scan of the whole table (docs/performance.md#the-head-query).
// Mutation-checked: without V6 the head query plans msg_event_pkey.
TEST_F(DispatcherTest, TheOutboxQueriesSkipSentEventsWhenPlannedForAnAllPendingOutbox) {
  constexpr int kPerTarget = 10'000;
  constexpr int kSent = 8'000;  // per target; KAFKA:schd's next 500 are an open batch
  const std::string n = std::to_string(kPerTarget);
  for (const char* target : {"KAFKA:msg", "KAFKA:schd", "KAFKA:ref"}) {
    pg_->Psql(UrlDb(),
              "INSERT INTO msg_event (event_key, target, partition_key, event_type, "
              "state_version, payload_json, created_at, source_msg_id) "
              "SELECT '" +
                  std::string(target) + ":' || i || ':0', '" + target +
                  "', 'F' || (i % 50), 'UPSERT', i, repeat('p', 1000), now(), i "
                  "FROM generate_series(1, " +
                  n + ") AS i ORDER BY i");
  }
  pg_->Psql(UrlDb(), "ANALYZE msg_event");
  pg_->Psql(
      UrlDb(),
      "UPDATE msg_event e SET batch_id = f.first + (e.event_id - f.first) / 500 * 500 "
      "FROM (SELECT min(event_id) AS first FROM msg_event_state WHERE target = 'KAFKA:schd') f "
      "WHERE target = 'KAFKA:schd' AND event_id < f.first + " +
          std::to_string(kSent + 500));
  // The first half of what is sent is marked SENT row by row (as before
  // V8, and as replays are), the second half is one delivered range that
  // leaves its rows PENDING, in the target's PENDING index.
  pg_->Psql(UrlDb(),
            "UPDATE msg_event e SET state = 'SENT', sent_at = now() FROM (SELECT target, "
            "min(event_id) AS first FROM msg_event GROUP BY target) f "
            "WHERE e.target = f.target AND e.event_id < f.first + " +
                std::to_string(kSent / 2));
  pg_->Psql(UrlDb(),
            "INSERT INTO outbox_delivery (target, first_event_id, last_event_id, events, sent_at) "
            "SELECT target, min(event_id) + " +
                std::to_string(kSent / 2) + ", min(event_id) + " + std::to_string(kSent - 1) +
                ", " + std::to_string(kSent / 2) + ", now() FROM msg_event GROUP BY target");
  ASSERT_EQ(
      Query(
          "SELECT count(*) FROM msg_event_state WHERE state = 'PENDING' AND batch_id IS NOT NULL"),
      "500");

  // The plan of CountOutbox for the dispatcher's parameters (an untyped
  // parameter compared with target is a varchar).
  auto plan = [&](const std::string& sql, const std::string& args) {
    return Query("SET plan_cache_mode = force_custom_plan; PREPARE q(varchar, int) AS " + sql +
                 "; EXPLAIN (COSTS OFF) EXECUTE q(" + args + ")");
  };
  // The generic plan of a head read: the plan PostgreSQL keeps for the
  // prepared statement (stream/pg/prepared.h), made without the values of
  // its parameters ($1 the limit, $2 and $3 what it leaves out).
  auto generic = [&](const std::string& sql) {
    return Query("SET plan_cache_mode = force_generic_plan; PREPARE q(int, bigint, text) AS " +
                 sql + "; EXPLAIN (COSTS OFF) EXECUTE q(2000, 0, '{}')");
  };
  for (const std::string target : {"msg", "schd", "ref"}) {
    const std::string name = "KAFKA:" + target;
    // The limit the service passes with a default configuration.
    const int limit = DispatcherOptions::ForTarget(Config{}, name).head_limit();
    const std::string args = "'" + name + "', " + std::to_string(limit);
    for (const auto& [what, shown] :
         {std::pair{"head", generic(Dispatcher::HeadQuery(name, false, false))},
          std::pair{"unbatched", generic(Dispatcher::HeadQuery(name, false, true))},
          std::pair{"count", plan(Dispatcher::CountOutboxQuery(), args)}}) {
      EXPECT_NE(shown.find("msg_event_pending_" + target + "_idx"), std::string::npos)
          << target << " " << what << ":\n"
          << shown;
      EXPECT_EQ(shown.find("msg_event_pkey"), std::string::npos) << target << " " << what;
      EXPECT_EQ(shown.find("Seq Scan on msg_event"), std::string::npos) << target << " " << what;
      // It starts at the delivered position, past the range's rows (the
      // head also past what is in flight).
      EXPECT_TRUE(shown.find("Index Cond: (event_id > $") != std::string::npos ||
                  shown.find("Index Cond: ((event_id > $") != std::string::npos)
          << target << " " << what << ":\n"
          << shown;
    }
  }
  const std::string open = generic(Dispatcher::HeadQuery("KAFKA:schd", true, false));
  EXPECT_NE(open.find("msg_event_open_batch_idx"), std::string::npos) << open;
  EXPECT_NE(open.find("Index Cond: ((event_id > $"), std::string::npos) << open;

  // And the queries still answer as before.
  Dispatcher d(
      session_.get(), nullptr, [] { return Result<std::int64_t>(0); }, &clock_,
      Options("KAFKA:msg", "t.msg"));
  auto counts = d.CountOutbox();
  ASSERT_TRUE(counts.ok()) << counts.status().ToString();
  EXPECT_EQ(counts->pending, kPerTarget - kSent);
  EXPECT_EQ(counts->dead, 0);
}

// A dispatcher's session keeps the generic plan of its head read from the
// moment it is made, until the table's statistics change. Made while the
// outbox is empty (a first start, a backlog drain right after it),
// that plan must still read replayed events through their own index: the
// target's PENDING index also holds every delivered event the retention has
// not deleted yet, and reading it below the delivered position cost a
// drain's head reads 3 million index entries for 85,000 events
// (docs/performance.md#the-head-read-planned-on-an-empty-outbox-2026-12-06).
TEST_F(DispatcherTest, AHeadReadPlannedOnAnEmptyOutboxDoesNotReadItsDeliveredEvents) {
  auto insert = [&](int from, int to) {
    return "INSERT INTO msg_event (event_key, target, partition_key, event_type, state_version, "
           "payload_json, created_at, source_msg_id) SELECT 'KAFKA:msg:' || i || ':0', "
           "'KAFKA:msg', 'F' || (i % 50), 'UPSERT', i, repeat('p', 1000), now(), i FROM "
           "generate_series(" +
           std::to_string(from) + ", " + std::to_string(to) + ") AS i ORDER BY i;";
  };
  // One session: the plan is made on an empty outbox, then 10,000 events
  // arrive and 9,000 are delivered, and the same prepared statement runs
  // again.
  const std::string shown =
      Query("SET plan_cache_mode = force_generic_plan; PREPARE q(int, bigint, text) AS " +
            Dispatcher::HeadQuery("KAFKA:msg", false, false) + "; EXECUTE q(2000, 0, '{}'); " +
            insert(1, 10'000) +
            "INSERT INTO outbox_delivery (target, first_event_id, last_event_id, events, sent_at) "
            "SELECT 'KAFKA:msg', min(event_id), min(event_id) + 8999, 9000, now() FROM "
            "msg_event; EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) EXECUTE q(2000, 0, '{}')");
  EXPECT_NE(shown.find("msg_event_pending_replayed_idx"), std::string::npos) << shown;
  EXPECT_EQ(shown.find("Rows Removed by Filter"), std::string::npos) << shown;
}

// The fenced head read streams its rows in the head read's own order: no
// sort above the join, which would hold every row, payloads too, until the
// last had been read (FencedReadSql). The join ON true is a nested loop,
// whose rows keep the inner statement's order.
TEST_F(DispatcherTest, TheFencedHeadReadHasNoSortOfItsOwn) {
  const std::string shown =
      Query("SET plan_cache_mode = force_generic_plan; PREPARE q(int, bigint, text, text) AS " +
            FencedReadSql(Dispatcher::HeadQuery("KAFKA:msg", false, false), 4) +
            "; EXPLAIN (COSTS OFF) EXECUTE q(2000, 0, '{}', 'main')");
  EXPECT_EQ(shown.rfind("Nested Loop Left Join", 0), 0u) << shown;
  EXPECT_EQ(shown.find("\nSort"), std::string::npos) << shown;
}

// The service's dispatcher for KAFKA:msg sends a drain in batches of
// claim_limit events, one Kafka transaction and one SENT update each: 2,000
// with a default configuration (docs/dispatch.md#in-msgx-run). Each SENT
// update is one delivered range (docs/dispatch.md#delivered-ranges).
TEST_F(DispatcherTest, TheServicesDispatcherSendsADrainInBatchesOfTwoThousand) {
  pg_->Psql(UrlDb(),
            "INSERT INTO msg_event (event_key, target, partition_key, event_type, "
            "state_version, payload_json, created_at, source_msg_id) "
            "SELECT 'KAFKA:msg:' || i || ':0', 'KAFKA:msg', 'F' || (i % 50), 'UPSERT', i, "
            "'{}', now(), i FROM generate_series(1, 2500) AS i ORDER BY i");
  DispatcherOptions o = DispatcherOptions::ForTarget(Config{}, "KAFKA:msg");  // unfenced
  o.topic = "t.msg";
  o.progress_topic = "t.progress";
  o.progress_key = DispatcherOptions::ProgressKey("log-test", "KAFKA:msg");
  auto pub = MakePublisher();
  Dispatcher d(
      session_.get(), pub.get(), [] { return Result<std::int64_t>(5000); }, &clock_, o);
  const std::vector<DispatchStep> steps = Drain(d);
  ASSERT_GE(steps.size(), 2u);
  EXPECT_EQ(steps[0].kind, DispatchStep::Kind::kSent);
  EXPECT_EQ(steps[0].sent, 2000);
  EXPECT_EQ(steps[1].sent, 500);
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'"), "2500");
  // One delivered range per batch, and no row rewritten.
  EXPECT_EQ(Query("SELECT string_agg(first_event_id || '..' || last_event_id || '/' || events, "
                  "',' ORDER BY last_event_id) FROM outbox_delivery"),
            "1..2000/2000,2001..2500/500");
  EXPECT_EQ(Query("SELECT count(*) FROM msg_event WHERE state <> 'PENDING' OR attempts <> 0"), "0");
}

}  // namespace
}  // namespace msgx
