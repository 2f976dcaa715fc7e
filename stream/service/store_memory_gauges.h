// StoreMemoryGauges: what the RocksDB stores hold in memory, as gauges set
// at each scrape of /metrics (docs/operations.md#memory):
//   msgx_store_block_cache_bytes           the shared block cache's usage,
//                                          pinned blocks included
//                                          (state/store_memory.h);
//   msgx_store_block_cache_capacity_bytes  its capacity (state.block-cache-mb);
//   msgx_store_table_readers_bytes{store}  table-file memory beside the cache;
//   msgx_store_memtables_bytes{store}      the memtables;
// with `store` "log" or "state".
//
// Thread-safety: constructed and destroyed on one thread; the hook runs on
// the thread that renders /metrics, and the destructor waits for it.
#pragma once

#include "base/metrics.h"
#include "state/log_store.h"
#include "state/state_store.h"

namespace msgx {

class StoreMemoryGauges {
 public:
  // REQUIRES: `metrics`, `log` and `state` outlive this object.
  StoreMemoryGauges(Metrics* metrics, const LogStore* log, const StateStore* state);
  ~StoreMemoryGauges();
  StoreMemoryGauges(const StoreMemoryGauges&) = delete;
  StoreMemoryGauges& operator=(const StoreMemoryGauges&) = delete;

 private:
  void Publish();

  Metrics* metrics_;
  const LogStore* log_;
  const StateStore* state_;
  Gauge* cache_usage_;
  Gauge* cache_capacity_;
  Gauge* log_readers_;
  Gauge* state_readers_;
  Gauge* log_memtables_;
  Gauge* state_memtables_;
  int hook_;
};

}  // namespace msgx
