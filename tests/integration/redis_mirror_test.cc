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

}  // namespace
}  // namespace msgx
