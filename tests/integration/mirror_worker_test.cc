// The mirror worker against a real redis-server and a real RocksDB state
// store: state is built by committing BatchWrites the way the fold does
// (flights + a matching pending batch + meta), and flightInfo must always
// equal FlightJson of every flight in state.
#include "stream/mirror/mirror_worker.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "base/log.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dirs.h"

namespace msgx {
namespace {

using Hash = std::map<std::string, std::string>;
using Kind = MirrorStep::Kind;

class MirrorWorkerTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    (void)InitLogging("off");
    server_ = testing::RedisServer::Start().release();
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    auto c = RedisClient::Create(server_->Url());
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    client_ = std::move(c.value());
    ASSERT_TRUE(client_->Command({"FLUSHALL"}).ok());
    auto dir = testing::MakeOwnedTempDir("mirror", std::nullopt);
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = *dir;
    auto s = StateStore::Open(dir_ + "/state", {false, false});
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s.value());
    mirror_ = std::make_unique<RedisMirror>(client_.get(), "log-A");
    // Two flights per chunk, so that a rebuild of three or more flights
    // takes several AddRebuildChunk calls.
    worker_ = std::make_unique<MirrorWorker>(mirror_.get(), store_.get(), &zone_, 2);
  }

  void TearDown() override {
    worker_.reset();
    store_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Commits fold batch [first, last]: each change sets flight FLID to a
  // record holding `n`, or deletes it (nullopt); the pending batch carries
  // the same flights, rendered as the fold renders them.
  void Commit(std::int64_t first, std::int64_t last,
              const std::map<std::string, std::optional<int>>& changes) {
    BatchWrite w;
    PendingBatch p;
    p.first_offset = first;
    p.last_offset = last;
    p.generation = kGeneration;
    p.last_append_micros = 1000;
    for (const auto& [flid, n] : changes) {
      if (!n) {
        w.flights[flid] = nullptr;
        p.flights.push_back({flid, std::nullopt});
        continue;
      }
      auto f = std::make_shared<Flight>();
      f->flid = flid;
      f->data.fields["ALCD"] = Value::Text("CA");
      f->data.fields["N"] = Value::Int(*n);
      f->version = last;
      p.flights.push_back({flid, FlightJson(*f, zone_)});
      w.flights[flid] = std::move(f);
    }
    w.meta.applied_offset = last;
    w.meta.generation = kGeneration;
    w.pending = std::move(p);
    ASSERT_TRUE(store_->Commit(w).ok());
  }

  Hash RedisHash() {
    auto r = client_->Command({"HGETALL", RedisMirror::kHashKey});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    Hash h;
    for (size_t i = 0; r.ok() && i + 1 < r->elements.size(); i += 2) {
      h[r->elements[i].str] = r->elements[i + 1].str;
    }
    return h;
  }

  Hash StateHash() {
    Hash h;
    auto meta = store_->ForEachFlight([&](const Flight& f) {
      h[f.flid] = FlightJson(f, zone_);
      return Status::Ok();
    });
    EXPECT_TRUE(meta.ok());
    return h;
  }

  MirrorStep StepOk() {
    auto s = worker_->Step();
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? *s : MirrorStep{Kind::kStalled, -2, s.status().ToString()};
  }

  // EVAL calls since the last ResetStats().
  long long EvalCalls() {
    auto r = client_->Command({"INFO", "commandstats"});
    EXPECT_TRUE(r.ok());
    const std::string& info = r->str;
    const auto at = info.find("cmdstat_eval:calls=");
    if (at == std::string::npos) return 0;
    return std::stoll(info.substr(at + 19));
  }
  void ResetStats() { ASSERT_TRUE(client_->Command({"CONFIG", "RESETSTAT"}).ok()); }

  // State [0,4] holding F1..F3, mirrored by a first rebuild.
  void StartMirrored() {
    Commit(0, 4, {{"F1", 1}, {"F2", 2}, {"F3", 3}});
    const MirrorStep s = StepOk();
    ASSERT_EQ(s.kind, Kind::kRebuilt);
    ASSERT_EQ(s.offset, 4);
  }

  static constexpr std::int64_t kGeneration = 3;
  static testing::RedisServer* server_;
  const FixedZone zone_{8 * 3600};
  std::string dir_;
  std::unique_ptr<RedisClient> client_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<RedisMirror> mirror_;
  std::unique_ptr<MirrorWorker> worker_;
};
testing::RedisServer* MirrorWorkerTest::server_ = nullptr;

TEST_F(MirrorWorkerTest, FreshRedisIsRebuiltFromState) {
  Commit(0, 4, {{"F1", 1}, {"F2", 2}, {"F3", 3}, {"F4", 4}, {"F5", 5}});
  const MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kRebuilt);
  EXPECT_EQ(s.offset, 4);
  EXPECT_EQ(worker_->offset(), 4);
  EXPECT_EQ(worker_->rebuilds(), 1);
  EXPECT_EQ(RedisHash().size(), 5u);
  EXPECT_EQ(RedisHash(), StateHash());
  auto pos = mirror_->Position();
  ASSERT_TRUE(pos.ok());
  EXPECT_EQ(pos->log_uuid, "log-A");
  EXPECT_EQ(pos->offset, 4);
  EXPECT_EQ(pos->generation, kGeneration);

  EXPECT_EQ(StepOk().kind, Kind::kIdle);
  EXPECT_EQ(worker_->rebuilds(), 1);
}

TEST_F(MirrorWorkerTest, EmptyStateRebuildsToAnEmptyMirror) {
  const MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kRebuilt);
  EXPECT_EQ(s.offset, -1);
  EXPECT_TRUE(RedisHash().empty());
  const MirrorStep idle = StepOk();
  EXPECT_EQ(idle.kind, Kind::kIdle);
  EXPECT_EQ(idle.offset, -1);
}

TEST_F(MirrorWorkerTest, EachBatchIsOneLuaCall) {
  StartMirrored();
  Commit(5, 9, {{"F1", 10}, {"F4", 4}});
  Commit(10, 12, {{"F2", std::nullopt}});
  ResetStats();

  MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kApplied);
  EXPECT_EQ(s.offset, 9);
  EXPECT_EQ(EvalCalls(), 1);
  EXPECT_EQ(RedisHash().count("F4"), 1u);
  EXPECT_EQ(RedisHash().count("F2"), 1u);

  s = StepOk();
  EXPECT_EQ(s.kind, Kind::kApplied);
  EXPECT_EQ(s.offset, 12);
  EXPECT_EQ(EvalCalls(), 2);
  EXPECT_EQ(RedisHash().count("F2"), 0u);  // the delete removed the field
  EXPECT_EQ(RedisHash(), StateHash());

  s = StepOk();
  EXPECT_EQ(s.kind, Kind::kIdle);
  EXPECT_EQ(s.offset, 12);
  EXPECT_EQ(EvalCalls(), 2);
  EXPECT_EQ(worker_->rebuilds(), 1);
}

TEST_F(MirrorWorkerTest, FlushallIsRebuiltWhileApplyingAndWhileIdle) {
  StartMirrored();
  Commit(5, 9, {{"F4", 4}});
  ASSERT_EQ(StepOk().kind, Kind::kApplied);
  // The worker holds the position it applied; Apply itself finds Redis empty.
  ASSERT_TRUE(client_->Command({"FLUSHALL"}).ok());
  Commit(10, 12, {{"F1", std::nullopt}, {"F5", 5}});
  MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kRebuilt);
  EXPECT_EQ(s.offset, 12);
  EXPECT_EQ(RedisHash(), StateHash());

  // Idle, nothing new to fold: the next Step still reads Redis.
  ASSERT_EQ(StepOk().kind, Kind::kIdle);
  ASSERT_TRUE(client_->Command({"FLUSHALL"}).ok());
  s = StepOk();
  EXPECT_EQ(s.kind, Kind::kRebuilt);
  EXPECT_EQ(s.offset, 12);
  EXPECT_EQ(RedisHash(), StateHash());
  EXPECT_EQ(worker_->rebuilds(), 3);
}

TEST_F(MirrorWorkerTest, PrunedPendingWhileBehindRebuilds) {
  StartMirrored();
  Commit(5, 9, {{"F4", 4}});
  Commit(10, 12, {{"F1", std::nullopt}});
  auto pruned = store_->PrunePending(12, 2000);
  ASSERT_TRUE(pruned.ok());
  ASSERT_EQ(*pruned, 3);
  const MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kRebuilt);
  EXPECT_EQ(s.offset, 12);
  EXPECT_EQ(RedisHash(), StateHash());
  EXPECT_EQ(RedisHash().count("F1"), 0u);
  EXPECT_EQ(worker_->rebuilds(), 2);
}

TEST_F(MirrorWorkerTest, BatchCutAcrossTheMirrorOffsetRebuilds) {
  Commit(0, 9, {{"F1", 1}, {"F2", 2}});
  // A mirror at 5 on this log: no pending batch starts at 6.
  ASSERT_TRUE(mirror_->BeginRebuild().ok());
  ASSERT_TRUE(mirror_->AddRebuildChunk({{"F1", "{}"}}).ok());
  ASSERT_TRUE(mirror_->CommitRebuild(5, 0).ok());
  const MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kRebuilt);
  EXPECT_EQ(s.offset, 9);
  EXPECT_EQ(RedisHash(), StateHash());
}

TEST_F(MirrorWorkerTest, AnotherLogsMirrorIsRebuilt) {
  Commit(0, 4, {{"F1", 1}});
  RedisMirror other(client_.get(), "log-B");
  ASSERT_TRUE(other.BeginRebuild().ok());
  ASSERT_TRUE(other.AddRebuildChunk({{"X", "{}"}}).ok());
  ASSERT_TRUE(other.CommitRebuild(100, 0).ok());  // ahead, but of another log
  const MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kRebuilt);
  EXPECT_EQ(s.offset, 4);
  EXPECT_EQ(RedisHash(), StateHash());
  auto pos = mirror_->Position();
  ASSERT_TRUE(pos.ok());
  EXPECT_EQ(pos->log_uuid, "log-A");
}

TEST_F(MirrorWorkerTest, MirrorAheadOnTheSameLogPausesUntilStateCatchesUp) {
  Commit(0, 4, {{"F1", 1}});
  ASSERT_TRUE(mirror_->BeginRebuild().ok());
  ASSERT_TRUE(mirror_->AddRebuildChunk({{"Z", "{\"z\":1}"}}).ok());
  ASSERT_TRUE(mirror_->CommitRebuild(20, 0).ok());
  const Hash before = RedisHash();

  MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kPaused);
  EXPECT_EQ(s.offset, 20);
  EXPECT_NE(s.error.find("mirror ahead of state (offset 20 > 4)"), std::string::npos) << s.error;
  EXPECT_EQ(RedisHash(), before);
  EXPECT_EQ(worker_->rebuilds(), 0);

  Commit(5, 20, {{"Z", 1}});  // the state store's rebuild reaches the mirror
  s = StepOk();
  EXPECT_EQ(s.kind, Kind::kIdle);
  EXPECT_EQ(s.offset, 20);
  EXPECT_EQ(RedisHash(), before);
}

TEST_F(MirrorWorkerTest, RedisMovedByAnotherWriterIsReadAgain) {
  StartMirrored();
  Commit(5, 9, {{"F4", 4}});
  ASSERT_EQ(StepOk().kind, Kind::kApplied);  // caches offset 9
  Commit(10, 12, {{"F5", 5}});
  MirrorWorker other(mirror_.get(), store_.get(), &zone_, 2);
  ASSERT_EQ(other.Step()->kind, Kind::kApplied);
  // Apply answers "already applied"; the worker reads 12 and is idle.
  const MirrorStep s = StepOk();
  EXPECT_EQ(s.kind, Kind::kIdle);
  EXPECT_EQ(s.offset, 12);
  EXPECT_EQ(worker_->rebuilds(), 1);
  EXPECT_EQ(RedisHash(), StateHash());
}

TEST_F(MirrorWorkerTest, OutageStallsAndCatchesUpAfterRestart) {
  StartMirrored();
  Commit(5, 9, {{"F4", 4}});
  ASSERT_EQ(StepOk().kind, Kind::kApplied);  // caches offset 9
  Commit(10, 12, {{"F5", 5}});
  server_->Stop();
  // Down during Apply, then during Position: a step outcome, not an error.
  for (int i = 0; i < 2; ++i) {
    auto s = worker_->Step();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    EXPECT_EQ(s->kind, Kind::kStalled);
    EXPECT_EQ(s->offset, 9);
    EXPECT_NE(s->error.find("INFRA"), std::string::npos) << s->error;
  }
  server_->Restart();  // no persistence: an empty Redis
  const MirrorStep after = StepOk();
  EXPECT_EQ(after.kind, Kind::kRebuilt);
  EXPECT_EQ(after.offset, 12);
  EXPECT_EQ(RedisHash(), StateHash());
}

}  // namespace
}  // namespace msgx
