// The block cache of msgx's RocksDB stores: one LRU cache per process that
// holds the table files' data blocks and also their index and filter
// blocks, so what the stores keep in memory for their table files is
// bounded by the cache's capacity instead of growing with the log
// (docs/operations.md#memory).
//
// RocksDB's default (BlockBasedTableOptions as constructed) keeps every
// open table file's index block, and its Bloom filter where it has one, on
// the heap outside any cache for as long as the file is open, and gives each
// column family its own 8 MB cache for data blocks. The log keeps every
// table file open (max_open_files -1, which its secondary readers need), and
// the log and the state store's outcomes never shrink, so that memory grew
// with every message ever captured.
//
// CachedTableOptions() puts those blocks in SharedBlockCache() instead:
//   - index and filter blocks are charged to the cache, in its high-priority
//     part, so data blocks are evicted before them;
//   - they are partitioned: a file's index and filter are cut into blocks
//     of about 4 KiB under a small top-level index, which stays pinned while
//     the file is open, so a look-up reads and caches only the partitions it
//     needs. (Unpartitioned, a file's filter is one block: 1.6 MB for a
//     64 MB table of identities, larger than a shard of the cache, so it
//     was dropped as soon as it was read and read again, and checksummed
//     again, by every look-up: measured, docs/performance.md#a-soak-at-2000-msgs-2026-12-07);
//   - those of level-0 files (the newest, read most) stay pinned while the
//     file lives, as RocksDB's own pinning rule allows;
// everything else is evicted least recently used. A read that misses reads
// the block from the file again (the page cache usually has it).
//
// Thread-safety: all of it, from any thread (rocksdb::Cache is).
#pragma once

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/table.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace msgx {

// The capacity SharedBlockCache() starts with, as `state.block-cache-mb`'s
// default.
inline constexpr std::size_t kDefaultBlockCacheBytes = std::size_t{64} << 20;

// The process's block cache, shared by every store msgx opens. Never null;
// lives to the end of the process. Its capacity can be changed at any time
// (SetCapacity; every msgx command sets it from `state.block-cache-mb`
// before it opens a store: app/setup.h); shrinking evicts what is over it.
std::shared_ptr<rocksdb::Cache> SharedBlockCache();

// Table options whose blocks all go through SharedBlockCache(), as above.
// Callers add what a column family needs (a filter policy) and keep the
// rest.
rocksdb::BlockBasedTableOptions CachedTableOptions();

// What a store holds in memory outside SharedBlockCache(), as RocksDB
// estimates it, summed over the column families given.
struct StoreMemory {
  // Table files' blocks kept beside the cache ("rocksdb.estimate-table-
  // readers-mem"): with CachedTableOptions() only the small per-file
  // readers themselves, not their index and filter blocks.
  std::uint64_t table_readers = 0;
  // The memtables, active and immutable ("rocksdb.cur-size-all-mem-tables"):
  // bounded by the write buffers and, in the state store, its WAL cap.
  std::uint64_t memtables = 0;
};
StoreMemory MemoryOf(rocksdb::DB* db, const std::vector<rocksdb::ColumnFamilyHandle*>& families);

}  // namespace msgx
