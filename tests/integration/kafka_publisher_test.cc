// KafkaPublisher against librdkafka's mock cluster, read back by a real
// read_committed consumer.
#include "stream/dispatch/kafka_publisher.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <thread>

#include "stream/dispatch/kafka_threads.h"
#include "tests/support/fixtures.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

OutgoingMessage Msg(const std::string& topic, const std::string& key, const std::string& value,
                    const std::string& event_id) {
  return {topic, key, value, {{"msgx-event-id", event_id}, {"msgx-type", "FLOP"}}};
}

class KafkaPublisherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    kafka_ = testing::KafkaMock::Start(1);
    kafka_->CreateTopic("t.events", 1);
  }
  KafkaPublisherOptions Options() {
    KafkaPublisherOptions o;
    o.bootstrap_servers = kafka_->Bootstrap();
    o.transactional_id =
        "msgx-test-" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
    o.txn_timeout = std::chrono::milliseconds(3000);
    return o;
  }
  std::unique_ptr<testing::KafkaMock> kafka_;
};

TEST_F(KafkaPublisherTest, RefusesAWeakenedD3NamingTheKey) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, std::string>>{
           {"max.in.flight.requests.per.connection", "5"},
           {"acks", "1"},
           {"enable.idempotence", "false"},
           {"request.required.acks", "0"}}) {
    KafkaPublisherOptions o = Options();
    o.producer[key] = value;
    auto p = KafkaPublisher::Create(o);
    ASSERT_FALSE(p.ok()) << key;
    EXPECT_EQ(p.status().error_class(), ErrorClass::kConfig);
    EXPECT_EQ(p.status().message().rfind("kafka.producer." + key + ":", 0), 0u)
        << p.status().message();
  }
}

TEST_F(KafkaPublisherTest, EffectiveConfigurationIsD3) {
  auto p = KafkaPublisher::Create(Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_EQ((*p)->EffectiveProperty("enable.idempotence"), "true");
  EXPECT_EQ((*p)->EffectiveProperty("max.in.flight.requests.per.connection"), "1");
  const std::string acks = (*p)->EffectiveProperty("acks");
  EXPECT_TRUE(acks == "-1" || acks == "all") << acks;
}

// Each thread librdkafka starts for the producer and for the progress
// reader has a signal stack, so that a stack overflow on it is reported
// (stream/dispatch/kafka_threads.h): a main thread and at least one broker
// thread each.
TEST_F(KafkaPublisherTest, TheClientsThreadsStartWithASignalStack) {
  // librdkafka may start a thread just after rd_kafka_new returns: the
  // count of `before` plus at least `more`, within 5 s.
  auto rises_by = [](std::int64_t before, std::int64_t more) {
    for (int i = 0; i < 50 && KafkaThreadsWithSignalStack() < before + more; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return KafkaThreadsWithSignalStack() - before;
  };
  const std::int64_t before = KafkaThreadsWithSignalStack();
  auto p = KafkaPublisher::Create(Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_GE(rises_by(before, 2), 2);
  kafka_->CreateTopic("t.progress", 1);
  const std::int64_t producer = KafkaThreadsWithSignalStack();
  auto none = (*p)->ReadProgress("t.progress", "log/KAFKA:msg");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_GE(rises_by(producer, 2), 2) << "the progress reader's threads";
}

TEST_F(KafkaPublisherTest, BatchIsVisibleInOrderWithHeaders) {
  auto p = KafkaPublisher::Create(Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<OutgoingMessage> batch{Msg("t.events", "F1", "v1", "e1"),
                                     Msg("t.events", "F2", "v2", "e2"),
                                     Msg("t.events", "F1", "v3", "e3")};
  PublishResult r = (*p)->Publish(batch);
  ASSERT_TRUE(r.committed) << r.outage.ToString() << r.permanent_error;
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.events", 3, std::chrono::seconds(10));
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].value, "v1");
  EXPECT_EQ(got[1].value, "v2");
  EXPECT_EQ(got[2].value, "v3");
  EXPECT_EQ(got[2].key, "F1");
  EXPECT_EQ(got[2].headers["msgx-event-id"], "e3");
  EXPECT_EQ(got[2].headers["msgx-type"], "FLOP");
}

TEST_F(KafkaPublisherTest, OversizedMessageIsPermanentAndNothingOfTheBatchIsVisible) {
  KafkaPublisherOptions o = Options();
  o.producer["message.max.bytes"] = "2000";
  auto p = KafkaPublisher::Create(o);
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<OutgoingMessage> batch{Msg("t.events", "F1", "small", "e1"),
                                     Msg("t.events", "F2", std::string(5000, 'x'), "e2"),
                                     Msg("t.events", "F3", "small", "e3")};
  PublishResult r = (*p)->Publish(batch);
  EXPECT_FALSE(r.committed);
  ASSERT_TRUE(r.permanent_index.has_value()) << r.outage.ToString();
  EXPECT_EQ(*r.permanent_index, 1u);
  EXPECT_NE(r.permanent_error.find("MSG_SIZE_TOO_LARGE"), std::string::npos) << r.permanent_error;

  // The publisher is still usable, and a read_committed consumer sees only
  // the later good batch.
  PublishResult ok =
      (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "after", "e4")});
  ASSERT_TRUE(ok.committed) << ok.outage.ToString();
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.events", 2, std::chrono::seconds(2));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].value, "after");
}

// An ACL change or a topic in trouble is the target's fault, not the
// event's: a stall (nothing charged), and delivery resumes when it heals.
TEST_F(KafkaPublisherTest, AuthorizationAndTopicErrorsAreOutagesNotTheEvents) {
  auto p = KafkaPublisher::Create(Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(
      (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v0", "e0")}).committed);
  for (rd_kafka_resp_err_t err :
       {RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
        RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED, RD_KAFKA_RESP_ERR_TOPIC_EXCEPTION}) {
    rd_kafka_mock_push_request_errors(kafka_->cluster(), 0 /* Produce */, 3, err, err, err);
    PublishResult failed =
        (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v1", "e1")});
    EXPECT_FALSE(failed.committed) << rd_kafka_err2name(err);
    EXPECT_FALSE(failed.permanent_index.has_value()) << failed.permanent_error;
    EXPECT_EQ(failed.outage.error_class(), ErrorClass::kInfra) << rd_kafka_err2name(err);
    rd_kafka_mock_clear_request_errors(kafka_->cluster(), 0);
  }
  PublishResult up;
  for (int attempt = 0; attempt < 10 && !up.committed; ++attempt) {
    up = (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v1", "e1")});
    EXPECT_FALSE(up.permanent_index.has_value()) << up.permanent_error;
  }
  ASSERT_TRUE(up.committed) << up.outage.ToString();
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.events", 3, std::chrono::seconds(5));
  ASSERT_EQ(got.size(), 2u);  // read_committed: the failed attempts are invisible
  EXPECT_EQ(got[1].value, "v1");
}

TEST_F(KafkaPublisherTest, BrokerDownIsAnOutageAndDeliveryResumes) {
  auto p = KafkaPublisher::Create(Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(
      (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v0", "e0")}).committed);

  kafka_->SetBrokerDown();
  PublishResult down =
      (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v1", "e1")});
  EXPECT_FALSE(down.committed);
  EXPECT_FALSE(down.permanent_index.has_value());
  EXPECT_EQ(down.outage.error_class(), ErrorClass::kInfra);

  kafka_->SetBrokerUp();
  PublishResult up;
  for (int attempt = 0; attempt < 10 && !up.committed; ++attempt) {
    up = (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v1", "e1")});
  }
  ASSERT_TRUE(up.committed) << up.outage.ToString();
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), "t.events", 3, std::chrono::seconds(5));
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[0].value, "v0");
  EXPECT_EQ(got.back().value, "v1");
  EXPECT_EQ(got.back().headers["msgx-event-id"], "e1");
}

// The progress read (docs/dispatch.md#exactly-once): the last value of the
// key in partition 0, found behind many records of other keys (the tail is
// widened), nothing for a key or a topic that has none, and an outage while
// the broker is down.
TEST_F(KafkaPublisherTest, ReadProgressFindsTheLastValueOfItsKey) {
  kafka_->CreateTopic("t.progress", 1);
  auto p = KafkaPublisher::Create(Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  auto record = [](const std::string& key, const std::string& value) {
    OutgoingMessage m{"t.progress", key, value, {}};
    m.partition = 0;
    return m;
  };
  std::vector<OutgoingMessage> batch{record("log/KAFKA:msg", "1:0:0"),
                                     record("log/KAFKA:msg", "7:0:2")};
  for (int i = 0; i < 300; ++i)
    batch.push_back(record("log/KAFKA:ref", std::to_string(i) + ":0:0"));
  ASSERT_TRUE((*p)->Publish(batch).committed);
  auto msg = (*p)->ReadProgress("t.progress", "log/KAFKA:msg");
  ASSERT_TRUE(msg.ok()) << msg.status().ToString();
  EXPECT_EQ(msg->value_or("none"), "7:0:2");
  auto ref = (*p)->ReadProgress("t.progress", "log/KAFKA:ref");
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  EXPECT_EQ(ref->value_or("none"), "299:0:0");
  auto none = (*p)->ReadProgress("t.progress", "log/KAFKA:schd");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_FALSE(none->has_value());
  auto no_topic = (*p)->ReadProgress("t.no-such-topic", "log/KAFKA:msg");
  ASSERT_TRUE(no_topic.ok()) << no_topic.status().ToString();
  EXPECT_FALSE(no_topic->has_value());

  kafka_->SetBrokerDown();
  auto down = (*p)->ReadProgress("t.progress", "log/KAFKA:msg");
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().error_class(), ErrorClass::kInfra) << down.status().ToString();
  kafka_->SetBrokerUp();
}

}  // namespace
}  // namespace msgx
