// The stores' memory beside the block cache stays small however much they
// hold (state/store_memory.h, docs/operations.md#memory): the table files'
// index and filter blocks are charged to the shared, bounded cache instead
// of being kept on the heap for as long as a file is open.
#include "state/store_memory.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <rocksdb/perf_context.h>
#include <rocksdb/perf_level.h>

#include <string>
#include <vector>

#include "state/log_store.h"
#include "state/state_store.h"
#include "tests/support/block_cache_capacity.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

constexpr std::int64_t kBindings = 100'000;

// A state store holding `bindings` identity bindings in its table files:
// written, closed, and opened again (opening writes the recovered
// memtables to level-0 files).
std::unique_ptr<StateStore> StoreWithBindings(const std::string& path,
                                              std::int64_t bindings = kBindings) {
  StateStore::Options options;
  options.sync = false;
  {
    auto store = StateStore::Open(path, options);
    EXPECT_TRUE(store.ok()) << store.status().ToString();
    if (!store.ok()) return nullptr;
    for (std::int64_t b = 0; b < bindings / 1000; ++b) {
      BatchWrite w;
      for (std::int64_t i = 0; i < 1000; ++i) {
        const std::string key = "AODB|FLOP|STND|" + std::to_string(b * 1000 + i);
        w.bindings[key] = IdentityBinding{key, b * 1000 + i, "h", 0};
      }
      w.meta.applied_offset = b;
      EXPECT_TRUE((*store)->Commit(w).ok());
    }
  }
  auto store = StateStore::Open(path, options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return store.ok() ? std::move(store).value() : nullptr;
}

TEST(StoreMemoryTest, TheStateStoresFiltersAndIndexesLiveInTheSharedCache) {
  TempDir dir;
  auto store = StoreWithBindings(dir.path() + "/state");
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->GetBinding("AODB|FLOP|STND|77").ok());
  // The identity family's Bloom filter alone is 10 bits a key, 122 KiB for
  // these bindings; beside the cache RocksDB's default would keep it and
  // the index blocks on the heap. In the cache they are pinned (level 0).
  const StoreMemory m = store->Memory();
  EXPECT_LT(m.table_readers, 32u << 10) << "filter or index blocks kept beside the cache";
  EXPECT_GE(SharedBlockCache()->GetPinnedUsage(), kBindings * 10 / 8)
      << "the level-0 filter is not pinned in the shared cache";
}

// The blocks RocksDB reads from the table files for one look-up.
std::uint64_t BlocksReadBy(const StateStore& store, const std::string& key) {
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kEnableCount);
  rocksdb::get_perf_context()->Reset();
  EXPECT_TRUE(store.GetBinding(key).ok());
  const std::uint64_t n = rocksdb::get_perf_context()->block_read_count;
  rocksdb::SetPerfLevel(rocksdb::PerfLevel::kDisable);
  return n;
}

// Compacts every column family of the closed store at `path` out of level
// 0, as RocksDB does with a store that has been written for a while, with
// the store's own options (the identity family keeps its filters): the
// blocks of files below level 0 are not pinned, so they must fit the cache.
void CompactOutOfLevelZero(const std::string& path) {
  std::vector<std::string> names;
  ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), path, &names).ok());
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  families.reserve(names.size());
  for (const std::string& n : names) families.emplace_back(n, StateStoreFamilyOptions(n));
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* db = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), path, families, &handles, &db).ok());
  for (rocksdb::ColumnFamilyHandle* h : handles) {
    EXPECT_TRUE(db->CompactRange(rocksdb::CompactRangeOptions(), h, nullptr, nullptr).ok());
    EXPECT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  }
  EXPECT_TRUE(db->Close().ok());
  delete db;
}

TEST(StoreMemoryTest, ALookUpReadsNothingTheOneBeforeItRead) {
  // A small cache, so that a whole file's filter (400,000 keys at 10 bits,
  // 490 KiB) would be larger than a shard of it (2 MiB in four shards is
  // 512 KiB each; 4 MiB in 64 shards was 64 KiB each).
  // Put back for the tests after this one, also when an assertion returns.
  BlockCacheCapacityRestorer restorer;
  SharedBlockCache()->SetCapacity(std::size_t{2} << 20);
  {
    TempDir dir;
    const std::string path = dir.path() + "/state";
    StoreWithBindings(path, 400'000).reset();
    CompactOutOfLevelZero(path);
    auto opened = StateStore::Open(path, {});
    ASSERT_TRUE(opened.ok()) << opened.status().ToString();
    const std::unique_ptr<StateStore> store = std::move(opened).value();
    // A key that is not bound: the filter answers it, the first time from
    // the file, then from the cache.
    (void)BlocksReadBy(*store, "AODB|FLOP|STND|none");
    EXPECT_EQ(BlocksReadBy(*store, "AODB|FLOP|STND|none"), 0U)
        << "a block is read from the file again: too large to stay in the cache";
    (void)BlocksReadBy(*store, "AODB|FLOP|STND|123456");
    EXPECT_EQ(BlocksReadBy(*store, "AODB|FLOP|STND|123456"), 0U);
  }
}

TEST(StoreMemoryTest, TheLogsIndexesLiveInTheSharedCache) {
  TempDir dir;
  const std::string path = dir.path() + "/log";
  ManualClock clock{1'700'000'000'000'000};
  const std::string xml(400, 'x');
  {
    auto log = LogStore::Open(path, &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (std::int64_t b = 0; b < 100; ++b) {
      std::vector<LogRecordData> records;
      for (std::int64_t i = 1; i <= 1000; ++i) {
        const std::int64_t id = b * 1000 + i;
        records.push_back(LogRecordData::Message(id, xml + std::to_string(id), 1000 * id));
      }
      CaptureProgress p;
      p.watermark = (b + 1) * 1000;
      ASSERT_TRUE((*log)->Append(records, p).ok());
    }
  }
  auto log = LogStore::Open(path, &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  std::vector<LogEntry> entries;
  ASSERT_TRUE((*log)->Read(50'000, 10, &entries).ok());
  ASSERT_EQ(entries.size(), 10u);
  // 100,000 records of about 450 bytes fill about 11,000 blocks of 4 KiB,
  // whose index is over 100 KiB.
  EXPECT_LT((*log)->Memory().table_readers, 32u << 10) << "index blocks kept beside the cache";
}

}  // namespace
}  // namespace msgx
