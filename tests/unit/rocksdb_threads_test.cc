// RocksDB's background jobs run on a thread with a signal stack
// (state/rocksdb_threads.h), for both stores msgx opens. Each test makes a
// store flush a memtable, which RocksDB does in a background job.
#include "state/rocksdb_threads.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <string>

#include "state/log_store.h"
#include "state/state_store.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using msgx::testing::TempDir;

// The state store's flush goes through that Env. The write that makes it
// due schedules it; whether a pool thread runs it before the store closes
// is a race (closing unschedules a job not yet picked up), so this checks
// the scheduling, and the log's test below that a job runs with the stack.
TEST(RocksDbThreadsTest, TheStateStoresFlushIsScheduledThroughThatEnv) {
  TempDir dir;
  const std::int64_t before = RocksDbJobsScheduled();
  {
    // A write-ahead log over its bound makes RocksDB flush the memtables
    // that hold its oldest log (StateStore::Options::max_wal_bytes).
    StateStore::Options options;
    options.sync = false;
    options.max_wal_bytes = 1;
    auto store = StateStore::Open(dir.path() + "/state", options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    for (std::int64_t id = 1; id <= 3; ++id) {
      BatchWrite w;
      Outcome o;
      o.mailbox_id = id;
      o.last_error = std::string(4096, 'x');
      w.outcomes[o.mailbox_id] = o;
      ASSERT_TRUE((*store)->Commit(w).ok());
    }
    EXPECT_GT(RocksDbJobsScheduled(), before);
  }
}

// The log's options (LogStoreOptions, which LogStore and LogReader open
// with) on a database flushed by hand.
TEST(RocksDbThreadsTest, TheLogsFlushRunsWithASignalStack) {
  TempDir dir;
  const std::int64_t scheduled = RocksDbJobsScheduled();
  const std::int64_t before = RocksDbJobsWithSignalStack();
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(LogStoreOptions(), dir.path() + "/log", &raw).ok());
  const std::unique_ptr<rocksdb::DB> db(raw);
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), "k", "v").ok());
  ASSERT_TRUE(db->Flush(rocksdb::FlushOptions()).ok());  // waits for the job
  EXPECT_GT(RocksDbJobsScheduled(), scheduled);
  EXPECT_GT(RocksDbJobsWithSignalStack(), before);
}

}  // namespace
}  // namespace msgx
