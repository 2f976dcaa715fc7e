#include "state/store_memory.h"

namespace msgx {

std::shared_ptr<rocksdb::Cache> SharedBlockCache() {
  static const std::shared_ptr<rocksdb::Cache> cache = [] {
    rocksdb::LRUCacheOptions o;
    o.capacity = kDefaultBlockCacheBytes;
    // Index and filter blocks may take up to half of it before they evict
    // each other; data blocks take what is left, and all of it when the
    // index and filter blocks need less.
    o.high_pri_pool_ratio = 0.5;
    // Four shards, not the 64 RocksDB picks for 64 MiB: a shard is an LRU of
    // its own, and a block larger than a shard is dropped as soon as it is
    // read, so it would be read again from the file on every look-up.
    o.num_shard_bits = 2;
    return rocksdb::NewLRUCache(o);
  }();
  return cache;
}

rocksdb::BlockBasedTableOptions CachedTableOptions() {
  rocksdb::BlockBasedTableOptions t;
  t.block_cache = SharedBlockCache();
  t.cache_index_and_filter_blocks = true;
  t.cache_index_and_filter_blocks_with_high_priority = true;
  t.pin_l0_filter_and_index_blocks_in_cache = true;
  // Index and filter in partitions of about 4 KiB under a small top-level
  // index that stays pinned: a look-up brings in the partitions it needs,
  // not a whole file's filter (1.6 MB for a 64 MB file of identities),
  // and the cache evicts them one by one.
  t.index_type = rocksdb::BlockBasedTableOptions::IndexType::kTwoLevelIndexSearch;
  t.partition_filters = true;
  t.metadata_block_size = 4096;
  t.pin_top_level_index_and_filter = true;
  return t;
}

StoreMemory MemoryOf(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& families) {
  StoreMemory m;
  for (rocksdb::ColumnFamilyHandle* cf : families) {
    std::uint64_t v = 0;
    if (db->GetIntProperty(cf, rocksdb::DB::Properties::kEstimateTableReadersMem, &v)) {
      m.table_readers += v;
    }
    if (db->GetIntProperty(cf, rocksdb::DB::Properties::kCurSizeAllMemTables, &v)) m.memtables += v;
  }
  return m;
}

}  // namespace msgx
