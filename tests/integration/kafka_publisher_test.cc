// KafkaPublisher against librdkafka's mock cluster, read back by a real
// read_committed consumer.
#include "stream/kafka_publisher.h"

#include <gtest/gtest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <thread>

#include "tests/support/servers.h"

namespace msgx {
namespace {

struct Consumed {
  std::string key, value;
  std::map<std::string, std::string> headers;
};

// Reads up to `want` messages of partition 0 of `topic` from the beginning,
// giving up after `wait`.
std::vector<Consumed> Consume(const std::string& bootstrap, const std::string& topic, size_t want,
                              std::chrono::milliseconds wait) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  rd_kafka_conf_set(conf, "bootstrap.servers", bootstrap.c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "group.id", "msgx-test", err, sizeof(err));
  rd_kafka_conf_set(conf, "isolation.level", "read_committed", err, sizeof(err));
  rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof(err));
  rd_kafka_t* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
  EXPECT_NE(c, nullptr) << err;
  rd_kafka_topic_partition_list_t* parts = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(parts, topic.c_str(), 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  rd_kafka_assign(c, parts);
  rd_kafka_topic_partition_list_destroy(parts);
  std::vector<Consumed> out;
  const auto deadline = std::chrono::steady_clock::now() + wait;
  while (out.size() < want && std::chrono::steady_clock::now() < deadline) {
    rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 100);
    if (m == nullptr) continue;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      Consumed x;
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
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
  return out;
}

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

TEST_F(KafkaPublisherTest, BatchIsVisibleInOrderWithHeaders) {
  auto p = KafkaPublisher::Create(Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  std::vector<OutgoingMessage> batch{Msg("t.events", "F1", "v1", "e1"),
                                     Msg("t.events", "F2", "v2", "e2"),
                                     Msg("t.events", "F1", "v3", "e3")};
  PublishResult r = (*p)->Publish(batch);
  ASSERT_TRUE(r.committed) << r.outage.ToString() << r.permanent_error;
  auto got = Consume(kafka_->Bootstrap(), "t.events", 3, std::chrono::seconds(10));
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
  auto got = Consume(kafka_->Bootstrap(), "t.events", 2, std::chrono::seconds(2));
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].value, "after");
}

TEST_F(KafkaPublisherTest, BrokerDownIsAnOutageAndDeliveryResumes) {
  auto p = KafkaPublisher::Create(Options());
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  ASSERT_TRUE(
      (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v0", "e0")}).committed);

  rd_kafka_mock_broker_set_down(kafka_->cluster(), 1);
  PublishResult down =
      (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v1", "e1")});
  EXPECT_FALSE(down.committed);
  EXPECT_FALSE(down.permanent_index.has_value());
  EXPECT_EQ(down.outage.error_class(), ErrorClass::kInfra);

  rd_kafka_mock_broker_set_up(kafka_->cluster(), 1);
  PublishResult up;
  for (int attempt = 0; attempt < 10 && !up.committed; ++attempt) {
    up = (*p)->Publish(std::vector<OutgoingMessage>{Msg("t.events", "F1", "v1", "e1")});
  }
  ASSERT_TRUE(up.committed) << up.outage.ToString();
  auto got = Consume(kafka_->Bootstrap(), "t.events", 3, std::chrono::seconds(5));
  ASSERT_GE(got.size(), 2u);
  EXPECT_EQ(got[0].value, "v0");
  EXPECT_EQ(got.back().value, "v1");
  EXPECT_EQ(got.back().headers["msgx-event-id"], "e1");
}

}  // namespace
}  // namespace msgx
