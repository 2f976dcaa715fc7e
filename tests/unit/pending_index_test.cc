// The state store's index of pending batches (state/state_store.h, meta
// "batch/pending/"): listing and pruning read the index, not the batches; it is
// kept out of the canonical state; a store written before the index is
// listed from its batches read-only and indexed when opened writable.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <vector>

#include "state/state_store.h"
#include "tests/support/raw_state_store.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT
using Ranges = std::vector<std::pair<std::int64_t, std::int64_t>>;

// Commits batch [first, last] whose last record was appended at `append`.
void CommitBatch(StateStore& store, std::int64_t first, std::int64_t last,
                 MicrosSinceEpoch append) {
  BatchWrite w;
  Outcome o;
  o.mailbox_id = first + 1;
  o.log_offset = first;
  w.outcomes[o.mailbox_id] = o;
  w.meta.applied_offset = last;
  PendingBatch p;
  p.first_offset = first;
  p.last_offset = last;
  p.last_append_micros = append;
  p.outcomes.push_back({o, 0, 0});
  w.pending = std::move(p);
  ASSERT_TRUE(store.Commit(w).ok());
}

StateStore::Options Writable() {
  StateStore::Options o;
  o.sync = false;
  return o;
}

StateStore::Options ReadOnly() {
  StateStore::Options o;
  o.sync = false;
  o.read_only = true;
  return o;
}

// The index's keys in the store at `path` (closed); with `drop`, removes
// them, as a store of the version before the index has none.
std::vector<std::string> IndexKeys(const std::string& path, bool drop) {
  RawStateStore store(path);
  EXPECT_TRUE(store.ok());
  if (!store.ok()) return {};
  rocksdb::ColumnFamilyHandle* meta = store.cf("meta");
  std::vector<std::string> keys;
  std::unique_ptr<rocksdb::Iterator> it(store.db()->NewIterator(rocksdb::ReadOptions(), meta));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string k = it->key().ToString();
    if (k.starts_with("batch/pending")) keys.push_back(k);
  }
  it.reset();
  for (const std::string& k : keys) {
    if (drop) {
      EXPECT_TRUE(store.db()->Delete(rocksdb::WriteOptions(), meta, k).ok());
    }
  }
  return keys;
}

TEST(PendingIndexTest, ListsAndPrunesFromTheIndex) {
  TempDir dir;
  auto store = StateStore::Open(dir.path() + "/state", Writable());
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  CommitBatch(**store, 0, 9, 100);
  CommitBatch(**store, 10, 19, 200);
  CommitBatch(**store, 20, 24, 300);
  EXPECT_EQ((*store)->PendingRanges().value(), (Ranges{{0, 9}, {10, 19}, {20, 24}}));
  EXPECT_EQ((*store)->BatchEnds().value().size(), 3u);  // the index is no batch end

  // Up to 19, appended before 150: the first batch only.
  EXPECT_EQ((*store)->PrunePending(19, 150).value(), 1);
  EXPECT_EQ((*store)->PendingRanges().value(), (Ranges{{10, 19}, {20, 24}}));
  EXPECT_FALSE((*store)->PendingCovering(5).value().has_value());
  // Nothing after `upto` goes, however old.
  EXPECT_EQ((*store)->PrunePending(19, 1000).value(), 1);
  EXPECT_EQ((*store)->PendingRanges().value(), (Ranges{{20, 24}}));
  ASSERT_TRUE((*store)->PendingCovering(22).value().has_value());
  EXPECT_EQ((*store)->PendingCovering(20).value()->last_offset, 24);

  // The index is not state.
  Status s = (*store)->ForEachEntry([](std::string_view cf, std::string_view key, auto) {
    EXPECT_FALSE(cf == "meta" && key.starts_with("batch/")) << key;
  });
  EXPECT_TRUE(s.ok());
}

TEST(PendingIndexTest, AStoreWrittenBeforeTheIndexIsListedAndThenIndexed) {
  TempDir dir;
  const std::string path = dir.path() + "/state";
  {
    auto store = StateStore::Open(path, Writable());
    ASSERT_TRUE(store.ok());
    CommitBatch(**store, 0, 9, 100);
    CommitBatch(**store, 10, 19, 200);
  }
  EXPECT_EQ(IndexKeys(path, /*drop=*/true).size(), 3u);  // two batches and the marker
  {
    // Read-only: listed from the batches themselves.
    auto store = StateStore::Open(path, ReadOnly());
    ASSERT_TRUE(store.ok());
    EXPECT_EQ((*store)->PendingRanges().value(), (Ranges{{0, 9}, {10, 19}}));
  }
  {
    auto store = StateStore::Open(path, Writable());
    ASSERT_TRUE(store.ok());
    CommitBatch(**store, 20, 29, 300);
    EXPECT_EQ((*store)->PendingRanges().value(), (Ranges{{0, 9}, {10, 19}, {20, 29}}));
  }
  // The writable open indexed the two older batches.
  EXPECT_EQ(IndexKeys(path, /*drop=*/false).size(), 4u);
  auto store = StateStore::Open(path, Writable());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->PrunePending(19, 250).value(), 2);
  EXPECT_EQ((*store)->PendingRanges().value(), (Ranges{{20, 29}}));
}

}  // namespace
}  // namespace msgx
