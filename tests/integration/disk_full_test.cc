// A full disk under both RocksDB stores: while there is no space, a write
// fails as an outage (kInfra) and changes nothing; once space is back, a
// retry succeeds within seconds, without a restart: RocksDB stops writes on
// the first failure and resumes them itself when its SstFileManager sees
// free space again (docs/operations.md#error-classes). The full
// disk is a FileSystem wrapper whose files refuse to grow (write() fails
// with ENOSPC) while `full` is set. In the integration binary because
// RocksDB's recovery runs on its own thread: the test waits for it.
#include <gtest/gtest.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "base/clock.h"
#include "state/log_record.h"
#include "state/log_store.h"
#include "state/state_store.h"
#include "tests/support/temp_dirs.h"

namespace msgx {
namespace {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

rocksdb::IOStatus NoSpace() { return IOStatus::NoSpace("injected: no space left on device"); }

class FullDiskFile final : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FullDiskFile(std::unique_ptr<rocksdb::FSWritableFile> f, const std::atomic<bool>* full)
      : FSWritableFileOwnerWrapper(std::move(f)), full_(full) {}
  // The analyzer loses track of IOStatus's own message buffer here.
  // NOLINTBEGIN(clang-analyzer-cplusplus.NewDeleteLeaks)
  IOStatus Append(const rocksdb::Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    return *full_ ? NoSpace() : target()->Append(data, o, dbg);
  }
  IOStatus Append(const rocksdb::Slice& data, const IOOptions& o,
                  const rocksdb::DataVerificationInfo& v, IODebugContext* dbg) override {
    return *full_ ? NoSpace() : target()->Append(data, o, v, dbg);
  }
  // NOLINTEND(clang-analyzer-cplusplus.NewDeleteLeaks)

 private:
  const std::atomic<bool>* full_;
};

class FullDiskFs final : public rocksdb::FileSystemWrapper {
 public:
  FullDiskFs() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FullDiskFs"; }
  IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& o,
                           std::unique_ptr<rocksdb::FSWritableFile>* r,
                           IODebugContext* dbg) override {
    if (full) return NoSpace();
    std::unique_ptr<rocksdb::FSWritableFile> f;
    IOStatus s = target()->NewWritableFile(name, o, &f, dbg);
    if (s.ok()) *r = std::make_unique<FullDiskFile>(std::move(f), &full);
    return s;
  }
  std::atomic<bool> full{false};
};

class DiskFullTest : public ::testing::Test {
 protected:
  std::shared_ptr<FullDiskFs> fs_ = std::make_shared<FullDiskFs>();
  std::unique_ptr<rocksdb::Env> env_ = rocksdb::NewCompositeEnv(fs_);
  void SetUp() override {
    auto dir = testing::MakeOwnedTempDir("diskfull", std::nullopt);
    ASSERT_TRUE(dir.ok()) << dir.status().ToString();
    dir_ = *dir;
  }
  std::string dir_;
};

// Retries `write` as a stalled stage would (every 100 ms) until it succeeds
// or 30 s have passed; its last status.
Status RetryFor30s(const std::function<Status()>& write) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  Status s = write();
  while (!s.ok() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    s = write();
  }
  return s;
}

BatchWrite OneOutcome(std::int64_t offset) {
  BatchWrite w;
  Outcome o;
  o.mailbox_id = offset + 1;
  o.state = OutcomeState::kSucceeded;
  o.log_offset = offset;
  w.outcomes[o.mailbox_id] = o;
  w.meta.applied_offset = offset;
  w.meta.digest = std::string(32, 'd');
  return w;
}

TEST_F(DiskFullTest, TheStateStoreStallsWhileFullAndResumesWhenSpaceReturns) {
  auto store = StateStore::Open(dir_ + "/state", {true, false, env_.get()});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Commit(OneOutcome(0)).ok());

  fs_->full = true;
  for (int attempt = 0; attempt < 3; ++attempt) {
    Status s = (*store)->Commit(OneOutcome(1));
    EXPECT_EQ(s.error_class(), ErrorClass::kInfra) << s.ToString();
    EXPECT_NE(s.message().find("space"), std::string::npos) << s.message();
  }
  fs_->full = false;
  Status s = RetryFor30s([&] { return (*store)->Commit(OneOutcome(1)); });
  ASSERT_TRUE(s.ok()) << s.ToString();
  auto meta = (*store)->ReadMeta();
  ASSERT_TRUE(meta.ok());
  EXPECT_EQ(meta->applied_offset, 1);
  auto o = (*store)->GetOutcome(2);
  ASSERT_TRUE(o.ok() && o->has_value());
  EXPECT_EQ((*o)->log_offset, 1);
}

TEST_F(DiskFullTest, TheLogStallsWhileFullAndResumesWithoutAGap) {
  ManualClock clock(1'000'000);
  auto log = LogStore::Open(dir_ + "/log", &clock, env_.get());
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const LogRecordData first = LogRecordData::Message(1, "<MSG/>", std::nullopt);
  CaptureProgress p;
  p.watermark = 1;
  ASSERT_TRUE((*log)->Append({&first, 1}, p).ok());

  fs_->full = true;
  const LogRecordData second = LogRecordData::Message(2, "<MSG/>", std::nullopt);
  p.watermark = 2;
  for (int attempt = 0; attempt < 3; ++attempt) {
    auto r = (*log)->Append({&second, 1}, p);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().error_class(), ErrorClass::kInfra) << r.status().ToString();
  }
  EXPECT_EQ((*log)->next_offset(), 1u);
  fs_->full = false;
  Result<std::uint64_t> r = Status::Infra("not tried");
  Status st = RetryFor30s([&] {
    r = (*log)->Append({&second, 1}, p);
    return r.ok() ? Status::Ok() : r.status();
  });
  ASSERT_TRUE(st.ok()) << st.ToString();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, 1u);
  std::vector<LogEntry> all;
  ASSERT_TRUE((*log)->Read(0, 10, &all).ok());
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].offset, 1u);
}

}  // namespace
}  // namespace msgx
