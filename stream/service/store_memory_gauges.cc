#include "stream/service/store_memory_gauges.h"

#include "state/store_memory.h"

namespace msgx {

StoreMemoryGauges::StoreMemoryGauges(Metrics* metrics, const LogStore* log, const StateStore* state)
    : metrics_(metrics),
      log_(log),
      state_(state),
      cache_usage_(metrics->GetGauge("msgx_store_block_cache_bytes",
                                     "Bytes in the stores' shared block cache")),
      cache_capacity_(metrics->GetGauge("msgx_store_block_cache_capacity_bytes",
                                        "Capacity of the stores' shared block cache")),
      log_readers_(metrics->GetGauge("msgx_store_table_readers_bytes",
                                     "Table-file memory a store keeps beside the block cache",
                                     {{"store", "log"}})),
      state_readers_(metrics->GetGauge("msgx_store_table_readers_bytes",
                                       "Table-file memory a store keeps beside the block cache",
                                       {{"store", "state"}})),
      log_memtables_(metrics->GetGauge("msgx_store_memtables_bytes", "Bytes in a store's memtables",
                                       {{"store", "log"}})),
      state_memtables_(metrics->GetGauge("msgx_store_memtables_bytes",
                                         "Bytes in a store's memtables", {{"store", "state"}})),
      hook_(metrics->AddScrapeHook([this] { Publish(); })) {}

StoreMemoryGauges::~StoreMemoryGauges() { metrics_->RemoveScrapeHook(hook_); }

void StoreMemoryGauges::Publish() {
  const std::shared_ptr<rocksdb::Cache> cache = SharedBlockCache();
  cache_usage_->Set(static_cast<double>(cache->GetUsage()));
  cache_capacity_->Set(static_cast<double>(cache->GetCapacity()));
  const StoreMemory log = log_->Memory();
  const StoreMemory state = state_->Memory();
  log_readers_->Set(static_cast<double>(log.table_readers));
  state_readers_->Set(static_cast<double>(state.table_readers));
  log_memtables_->Set(static_cast<double>(log.memtables));
  state_memtables_->Set(static_cast<double>(state.memtables));
}

}  // namespace msgx
