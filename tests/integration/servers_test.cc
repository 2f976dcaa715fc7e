// The test-support servers themselves: each starts, answers its own client
// tool, and is gone (process and files) after it is destroyed.
#include "tests/support/servers.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>

#include "base/subprocess.h"

namespace msgx::testing {
namespace {

TEST(ServersTest, PostgresAnswersAndIsGoneAfterwards) {
  auto pg = PgServer::Start();
  EXPECT_EQ(pg->Psql("postgres", "SELECT 40 + 2"), "42\n");
  pg->CreateDatabase("msgx_it");
  pg->CreateDatabase("msgx_it");  // no-op the second time
  EXPECT_EQ(pg->Psql("msgx_it", "SELECT current_database()"), "msgx_it\n");
  pg->Stop();
  EXPECT_FALSE(LoopbackPortOpen(pg->port()));
  pg->Restart();
  EXPECT_EQ(pg->Psql("msgx_it", "SELECT 1"), "1\n");
  int port = pg->port();
  pg.reset();
  EXPECT_FALSE(LoopbackPortOpen(port));
}

TEST(ServersTest, RedisAnswersPing) {
  auto redis = RedisServer::Start();
  SpawnOptions o;
  o.argv = {"redis-cli", "-p", std::to_string(redis->port()), "PING"};
  Result<CommandOutput> r = RunCommand(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->out, "PONG\n");
  EXPECT_EQ(redis->Url(), "redis://127.0.0.1:" + std::to_string(redis->port()) + "/0");
  redis->Restart();
  r = RunCommand(o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->out, "PONG\n");
  int port = redis->port();
  redis.reset();
  EXPECT_FALSE(LoopbackPortOpen(port));
}

TEST(ServersTest, KafkaMockListsTopicsToKcat) {
  auto kafka = KafkaMock::Start();
  kafka->CreateTopic("msgx.it.topic", 3);
  SpawnOptions o;
  o.argv = {"kcat", "-L", "-b", kafka->Bootstrap(), "-m", "10"};
  Result<CommandOutput> r = RunCommand(o);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(r->status.ok()) << r->err;
  EXPECT_NE(r->out.find("topic \"msgx.it.topic\" with 3 partitions"), std::string::npos) << r->out;
}

}  // namespace
}  // namespace msgx::testing
