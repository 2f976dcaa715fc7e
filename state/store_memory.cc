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
