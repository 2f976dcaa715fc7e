// The Redis mirror against a real redis-server (tests/support).
#include "state/redis_mirror.h"

#include <gtest/gtest.h>

#include "tests/support/servers.h"

namespace msgx {
namespace {

class RedisMirrorTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = testing::RedisServer::Start().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }
  void SetUp() override {
    auto c = RedisClient::Create(server_->Url());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(c.value());
    ASSERT_TRUE(client_->Command({"FLUSHALL"}).ok());
  }

  std::map<std::string, std::string> Hash() {
    auto r = client_->Command({"HGETALL", RedisMirror::kHashKey});
    EXPECT_TRUE(r.ok());
    std::map<std::string, std::string> h;
    for (size_t i = 0; r.ok() && i + 1 < r->elements.size(); i += 2) {
      h[r->elements[i].str] = r->elements[i + 1].str;
    }
    return h;
  }

  static MirrorBatch Batch(std::int64_t first, std::int64_t last, std::vector<MirrorChange> changes,
                           std::int64_t generation = 0) {
    MirrorBatch b;
    b.first = first;
    b.last = last;
    b.generation = generation;
    b.changes = std::move(changes);
    return b;
  }

  static testing::RedisServer* server_;
  std::unique_ptr<RedisClient> client_;
};
testing::RedisServer* RedisMirrorTest::server_ = nullptr;

TEST_F(RedisMirrorTest, FreshRedisIsUninitializedUntilRebuilt) {
  RedisMirror m(client_.get(), "log-A");
  auto pos = m.Position();
  ASSERT_TRUE(pos.ok());
  EXPECT_FALSE(pos->initialized);
  auto out = m.Apply(Batch(0, 9, {{"F1", "{}"}}));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, ApplyOutcome::kUninitialized);
  EXPECT_TRUE(Hash().empty());

  ASSERT_TRUE(m.BeginRebuild().ok());
  ASSERT_TRUE(m.CommitRebuild(-1, 0).ok());  // empty state
  pos = m.Position();
  ASSERT_TRUE(pos.ok());
  EXPECT_TRUE(pos->initialized);
  EXPECT_EQ(pos->offset, -1);
  EXPECT_EQ(pos->log_uuid, "log-A");
}

TEST_F(RedisMirrorTest, AppliesOnlyTheNextBatchInOrder) {
  RedisMirror m(client_.get(), "log-A");
  ASSERT_TRUE(m.BeginRebuild().ok());
  ASSERT_TRUE(m.CommitRebuild(-1, 0).ok());

  auto out = m.Apply(Batch(10, 19, {{"F2", "{\"a\":2}"}}));  // skips [0,9]
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, ApplyOutcome::kBehind);
  EXPECT_TRUE(Hash().empty());

  out = m.Apply(Batch(0, 9, {{"F1", "{\"a\":1}"}, {"F2", "{\"a\":2}"}}, 1));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, ApplyOutcome::kApplied);
  out = m.Apply(Batch(10, 19, {{"F1", std::nullopt}, {"F3", "{\"a\":3}"}}, 1));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, ApplyOutcome::kApplied);
  EXPECT_EQ(Hash(), (std::map<std::string, std::string>{{"F2", "{\"a\":2}"}, {"F3", "{\"a\":3}"}}));

  // A redo after a crash changes nothing.
  out = m.Apply(Batch(10, 19, {{"F3", "stale"}}));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, ApplyOutcome::kAlreadyApplied);
  EXPECT_EQ(Hash().at("F3"), "{\"a\":3}");
  // A batch cut differently across the mirror's offset is an overlap.
  out = m.Apply(Batch(15, 25, {{"F4", "{}"}}));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, ApplyOutcome::kOverlap);

  auto pos = m.Position();
  ASSERT_TRUE(pos.ok());
  EXPECT_EQ(pos->offset, 19);
  EXPECT_EQ(pos->generation, 1);
}

TEST_F(RedisMirrorTest, ForeignLogIsRefused) {
  RedisMirror a(client_.get(), "log-A");
  ASSERT_TRUE(a.BeginRebuild().ok());
  ASSERT_TRUE(a.CommitRebuild(4, 0).ok());
  RedisMirror b(client_.get(), "log-B");
  auto out = b.Apply(Batch(5, 6, {{"F1", "{}"}}));
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(*out, ApplyOutcome::kForeignLog);
  EXPECT_TRUE(Hash().empty());
}

TEST_F(RedisMirrorTest, RebuildReplacesTheHashAtOnce) {
  RedisMirror m(client_.get(), "log-A");
  ASSERT_TRUE(m.BeginRebuild().ok());
  ASSERT_TRUE(m.CommitRebuild(-1, 0).ok());
  ASSERT_TRUE(m.Apply(Batch(0, 3, {{"OLD", "{}"}})).ok());

  ASSERT_TRUE(m.BeginRebuild().ok());
  ASSERT_TRUE(m.AddRebuildChunk({{"N1", "{\"n\":1}"}, {"N2", "{\"n\":2}"}}).ok());
  // Until the commit, readers still see the old hash.
  EXPECT_EQ(Hash(), (std::map<std::string, std::string>{{"OLD", "{}"}}));
  ASSERT_TRUE(m.AddRebuildChunk({{"N3", "{\"n\":3}"}}).ok());
  ASSERT_TRUE(m.CommitRebuild(40, 7).ok());
  EXPECT_EQ(Hash().size(), 3u);
  EXPECT_EQ(Hash().count("OLD"), 0u);
  auto pos = m.Position();
  ASSERT_TRUE(pos.ok());
  EXPECT_EQ(pos->offset, 40);
  EXPECT_EQ(pos->generation, 7);
}

TEST_F(RedisMirrorTest, OutageIsInfraAndHealsAfterRestart) {
  RedisMirror m(client_.get(), "log-A");
  ASSERT_TRUE(m.BeginRebuild().ok());
  ASSERT_TRUE(m.CommitRebuild(-1, 0).ok());
  server_->Stop();
  auto down = m.Position();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().error_class(), ErrorClass::kInfra);
  server_->Restart();  // no persistence: the restarted Redis is empty
  auto pos = m.Position();
  ASSERT_TRUE(pos.ok()) << pos.status().ToString();
  EXPECT_FALSE(pos->initialized);  // the caller rebuilds
}

// The mirror is fenced by the leader epoch inside its scripts: once a newer
// leader has written, a stale one's batch and rebuild write nothing.
TEST_F(RedisMirrorTest, AStaleLeadersWritesAreRefusedInsideTheScript) {
  RedisMirror old_leader(client_.get(), "log-A");
  old_leader.set_epoch(5);
  ASSERT_TRUE(old_leader.BeginRebuild().ok());
  ASSERT_TRUE(old_leader.CommitRebuild(-1, 0).ok());
  ASSERT_EQ(*old_leader.Apply(Batch(0, 9, {{"F1", "{\"v\":1}"}})), ApplyOutcome::kApplied);
  RedisMirror new_leader(client_.get(), "log-A");
  new_leader.set_epoch(6);
  ASSERT_EQ(*new_leader.Apply(Batch(10, 19, {{"F1", "{\"v\":2}"}})), ApplyOutcome::kApplied);
  auto stale = old_leader.Apply(Batch(20, 29, {{"F1", "{\"v\":3}"}}));
  ASSERT_TRUE(stale.ok()) << stale.status().ToString();
  EXPECT_EQ(*stale, ApplyOutcome::kStaleEpoch);
  EXPECT_EQ(Hash().at("F1"), "{\"v\":2}");
  EXPECT_EQ(new_leader.Position()->offset, 19);
  ASSERT_TRUE(old_leader.BeginRebuild().ok());
  ASSERT_TRUE(old_leader.AddRebuildChunk({{"F9", "{}"}}).ok());
  Status rebuilt = old_leader.CommitRebuild(29, 0);
  EXPECT_EQ(rebuilt.error_class(), ErrorClass::kInfra) << rebuilt.ToString();
  EXPECT_FALSE(Hash().contains("F9"));
  // Unfenced (epoch 0, no PostgreSQL) writers are not refused.
  RedisMirror unfenced(client_.get(), "log-A");
  EXPECT_EQ(*unfenced.Apply(Batch(20, 29, {{"F1", "{\"v\":4}"}})), ApplyOutcome::kApplied);
}

// A Redis at maxmemory with noeviction answers -OOM to writes, also inside
// the mirror's script: an outage of Redis, not a bug of msgx.
TEST_F(RedisMirrorTest, OutOfMemoryIsAnOutageAndHealsWhenMemoryIsBack) {
  RedisMirror m(client_.get(), "log-A");
  ASSERT_TRUE(m.BeginRebuild().ok());
  ASSERT_TRUE(m.CommitRebuild(-1, 0).ok());
  ASSERT_TRUE(client_->Command({"CONFIG", "SET", "maxmemory-policy", "noeviction"}).ok());
  ASSERT_TRUE(client_->Command({"CONFIG", "SET", "maxmemory", "1"}).ok());
  auto full = m.Apply(Batch(0, 9, {{"F1", "{}"}}));
  ASSERT_TRUE(client_->Command({"CONFIG", "SET", "maxmemory", "0"}).ok());
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().error_class(), ErrorClass::kInfra) << full.status().ToString();
  EXPECT_NE(full.status().message().find("OOM"), std::string::npos) << full.status().ToString();
  auto out = m.Apply(Batch(0, 9, {{"F1", "{}"}}));
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(*out, ApplyOutcome::kApplied);
}

// The reply table of docs/operations.md#error-classes.
TEST(RedisReplyErrorClassTest, ServerFaultsAreOutages) {
  for (const char* outage :
       {"LOADING Redis is loading the dataset in memory", "BUSY Redis is busy running a script",
        "READONLY You can't write against a read only replica.", "MASTERDOWN Link is down",
        "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist",
        "OOM command not allowed when used memory > 'maxmemory'.",
        "NOREPLICAS Not enough good replicas to write.", "TRYAGAIN Multiple keys request",
        "CLUSTERDOWN The cluster is down", "NOAUTH Authentication required.",
        "ERR Error running script (call to f_1): @user_script:1: OOM command not allowed"}) {
    EXPECT_EQ(RedisReplyErrorClass(outage), ErrorClass::kInfra) << outage;
  }
  for (const char* bug : {"ERR unknown command 'FOO'", "WRONGTYPE Operation against a key",
                          "ERR Error running script: attempt to compare nil", "OOMPH", "ERR"}) {
    EXPECT_EQ(RedisReplyErrorClass(bug), ErrorClass::kInternal) << bug;
  }
}

}  // namespace
}  // namespace msgx
