#include "tests/support/raw_state_store.h"

#include <gtest/gtest.h>

#include "state/state_store.h"

namespace msgx::testing {

RawStateStore::RawStateStore(const std::string& path) {
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (std::size_t i = 0; i < StateStore::kColumnFamilies; ++i) {
    cfs.emplace_back(std::string(StateStore::ColumnFamilyName(i)), rocksdb::ColumnFamilyOptions());
  }
  rocksdb::DB* raw = nullptr;
  if (rocksdb::DB::Open(rocksdb::DBOptions(), path, cfs, &handles_, &raw).ok()) db_.reset(raw);
}

RawStateStore::~RawStateStore() {
  if (!db_) return;
  for (auto* h : handles_) EXPECT_TRUE(db_->DestroyColumnFamilyHandle(h).ok());
  EXPECT_TRUE(db_->Close().ok());
}

rocksdb::ColumnFamilyHandle* RawStateStore::cf(std::string_view name) {
  for (std::size_t i = 0; i < handles_.size(); ++i) {
    if (StateStore::ColumnFamilyName(i) == name) return handles_[i];
  }
  ADD_FAILURE() << "no column family " << name;
  return nullptr;
}

}  // namespace msgx::testing
