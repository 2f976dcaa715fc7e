#include "base/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

namespace msgx {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  // Writes `yaml` to a temp file and returns its path.
  std::string WriteYaml(const std::string& yaml) {
    path_ = std::filesystem::temp_directory_path() /
            ("msgx-config-test-" + std::to_string(::getpid()) + ".yaml");
    std::ofstream(path_) << yaml;
    return path_.string();
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove(path_, ec);
  }
  std::filesystem::path path_;
};

TEST_F(ConfigTest, DefaultsMatchSpec) {
  Result<Config> c = LoadConfig("", {});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->pipeline.poll_interval, Millis{1000});
  EXPECT_EQ(c->pipeline.batch_max, 1000);
  EXPECT_FALSE(c->pipeline.retry_deterministic);
  EXPECT_EQ(c->pipeline.max_attempts, 5);
  ASSERT_EQ(c->pipeline.backoff.size(), 5u);
  EXPECT_EQ(c->pipeline.backoff[4], Millis{16000});
  EXPECT_EQ(c->pipeline.backoff_cap, Millis{60000});
  EXPECT_EQ(c->pipeline.head_deadline, Millis{600000});
  EXPECT_EQ(c->pipeline.event_retention, Millis{7LL * 86400000});
  EXPECT_EQ(c->pipeline.pending_retention, Millis{24LL * 3600000});
  EXPECT_EQ(c->schd_flush_period, Millis{3000});
  EXPECT_EQ(c->schd_flush_limit, 500);
  EXPECT_EQ(c->schd_max_batch_bytes, 900000);
  EXPECT_FALSE(c->schd_snapshot_clear_missing);
  EXPECT_EQ(c->identity_window, Millis{30LL * 86400000});
  EXPECT_EQ(c->codec_max_bytes, 16LL * 1024 * 1024);
  EXPECT_EQ(c->capture_max_commit_delay, Millis{300000});
  EXPECT_EQ(c->history_keep_days, 2);
  EXPECT_EQ(c->airport_timezone, "Asia/Shanghai");
  // mailbox.time-zone not set: the airport's zone.
  EXPECT_EQ(c->mailbox_time_zone, "");
  EXPECT_EQ(MailboxTimeZone(*c), "Asia/Shanghai");
  EXPECT_EQ(c->topic_msg, "msgx.flight.events");
  EXPECT_EQ(c->topic_schd, "msgx.flight.schedule");
  EXPECT_EQ(c->topic_ref, "msgx.reference");
  EXPECT_EQ(c->ignore_rules, (std::vector<std::string>{"LDM-*", "REGN-*", "RSTA-*", "EROR-*"}));
}

TEST_F(ConfigTest, TheMailboxTimeZoneIsItsOwnOnceSet) {
  Result<Config> c = LoadConfig(
      "", {{"MSGX_MAILBOX_TIME_ZONE", "Europe/Berlin"}, {"MSGX_AIRPORT_TIMEZONE", "UTC"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(MailboxTimeZone(*c), "Europe/Berlin");
  EXPECT_EQ(c->airport_timezone, "UTC");
}

TEST_F(ConfigTest, FileValueAndEnvOverrideThatBeatsIt) {
  std::string path = WriteYaml(R"(
msgx:
  pipeline:
    batch-max: 250
    backoff-ms: [500, 1s]
postgres:
  url: postgresql://a@127.0.0.1:5432/msgx
kafka:
  producer:
    linger.ms: 7
ignore:
  rules: [LDM-*, ABNR-DEL]
)");
  Result<Config> file_only = LoadConfig(path, {});
  ASSERT_TRUE(file_only.ok()) << file_only.status().ToString();
  EXPECT_EQ(file_only->pipeline.batch_max, 250);
  EXPECT_EQ(file_only->pipeline.backoff, (std::vector<Millis>{Millis{500}, Millis{1000}}));
  EXPECT_EQ(file_only->postgres_url, "postgresql://a@127.0.0.1:5432/msgx");
  EXPECT_EQ(file_only->kafka_producer.at("linger.ms"), "7");
  EXPECT_EQ(file_only->ignore_rules, (std::vector<std::string>{"LDM-*", "ABNR-DEL"}));

  Result<Config> with_env = LoadConfig(path, {{"MSGX_PIPELINE_BATCH_MAX", "42"},
                                              {"MSGX_KAFKA_PRODUCER_LINGER_MS", "9"},
                                              {"MSGX_CAPTURE_MAX_COMMIT_DELAY", "90s"},
                                              {"MSGX_CONFIG", "ignored.yaml"},
                                              {"PATH", "/usr/bin"}});
  ASSERT_TRUE(with_env.ok()) << with_env.status().ToString();
  EXPECT_EQ(with_env->pipeline.batch_max, 42);
  EXPECT_EQ(with_env->kafka_producer.at("linger.ms"), "9");
  EXPECT_EQ(with_env->capture_max_commit_delay, Millis{90000});
  EXPECT_EQ(with_env->postgres_url, "postgresql://a@127.0.0.1:5432/msgx");  // file value kept
}

TEST_F(ConfigTest, UnknownFileKeyFailsNamingIt) {
  std::string path = WriteYaml("pipeline:\n  batch-maxx: 10\n");
  Result<Config> c = LoadConfig(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().error_class(), ErrorClass::kConfig);
  EXPECT_NE(c.status().message().find("pipeline.batch-maxx"), std::string::npos)
      << c.status().message();
}

TEST_F(ConfigTest, UnknownEnvVariableFailsNamingIt) {
  Result<Config> c = LoadConfig("", {{"MSGX_PIPELINE_BACTH_MAX", "5"}});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("MSGX_PIPELINE_BACTH_MAX"), std::string::npos);
}

TEST_F(ConfigTest, BadValuesFailNamingTheKey) {
  struct Case {
    std::string env, value, key;
  };
  const std::vector<Case> cases = {
      {"MSGX_PIPELINE_POLL_INTERVAL", "-1s", "pipeline.poll-interval"},
      {"MSGX_PIPELINE_POLL_INTERVAL", "10ms", "pipeline.poll-interval"},           // below floor
      {"MSGX_PIPELINE_BACKFILL_BACKOFF_MS", "0", "pipeline.backfill-backoff-ms"},  // below floor
      {"MSGX_PIPELINE_HEAD_DEADLINE", "soon", "pipeline.head-deadline"},
      {"MSGX_PIPELINE_BATCH_MAX", "0", "pipeline.batch-max"},
      {"MSGX_PIPELINE_RETRY_DETERMINISTIC", "maybe", "pipeline.retry-deterministic"},
      {"MSGX_POSTGRES_URL", "localhost:5432", "postgres.url"},
      {"MSGX_REDIS_URL", "http://x", "redis.url"},
      {"MSGX_KAFKA_BOOTSTRAP_SERVERS", "not a host", "kafka.bootstrap-servers"},
      {"MSGX_SCHD_SNAPSHOT_MISSING_FIELDS", "drop", "schd.snapshot-missing-fields"},
      {"MSGX_AIRPORT_TIMEZONE", "Mars/Olympus", "airport.timezone"},
      {"MSGX_MAILBOX_TIME_ZONE", "Mars/Olympus", "mailbox.time-zone"},
      {"MSGX_MAILBOX_TIME_ZONE", "../etc/passwd", "mailbox.time-zone"},
      {"MSGX_MAILBOX_TABLE", "cminmsgs; drop table x", "mailbox.table"},
      {"MSGX_CODEC_MAX_BYTES", "-5", "codec.max-bytes"},
      {"MSGX_IGNORE_RULES", "LDM", "ignore.rules"},
      {"MSGX_HISTORY_SWEEP_AT", "3:30", "history.sweep-at"},
      {"MSGX_HISTORY_SWEEP_AT", "never", "history.sweep-at"},
  };
  for (const auto& tc : cases) {
    Result<Config> c = LoadConfig("", {{tc.env, tc.value}});
    ASSERT_FALSE(c.ok()) << tc.env << "=" << tc.value;
    EXPECT_EQ(c.status().error_class(), ErrorClass::kConfig);
    EXPECT_EQ(c.status().message().rfind(tc.key + ":", 0), 0u) << c.status().message();
  }
}

TEST_F(ConfigTest, TheDailySweepCanBeTurnedOff) {
  Result<Config> c = LoadConfig("", {{"MSGX_HISTORY_SWEEP_AT", "off"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->history_sweep_at, "off");
}

TEST_F(ConfigTest, BadYamlFailsWithThePath) {
  std::string path = WriteYaml("pipeline: [unclosed\n");
  Result<Config> c = LoadConfig(path, {});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find(path), std::string::npos);
}

TEST_F(ConfigTest, DescribeListsEveryKeySorted) {
  Result<Config> c = LoadConfig("", {{"MSGX_KAFKA_PRODUCER_ACKS", "all"}});
  ASSERT_TRUE(c.ok());
  std::string d = DescribeConfig(*c);
  EXPECT_NE(d.find("pipeline.batch-max: 1000\n"), std::string::npos) << d;
  EXPECT_NE(d.find("pipeline.event-retention: 7d\n"), std::string::npos) << d;
  EXPECT_NE(d.find("kafka.producer.acks: all\n"), std::string::npos) << d;
  EXPECT_LT(d.find("airport.timezone"), d.find("pipeline.batch-max"));
}

}  // namespace
}  // namespace msgx
