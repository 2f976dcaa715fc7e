// RawStateStore: a closed state store (state/state_store.h) opened with
// RocksDB directly, every column family under its name, for tests that
// write what an older msgx would have left there (a store without the
// pending index, flights in the older flatbuffer form).
//
// Thread-safety: none; one test thread.
#pragma once

#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace msgx::testing {

class RawStateStore {
 public:
  // Opens the store at `path`; ok() says whether it opened.
  explicit RawStateStore(const std::string& path);
  // Destroys the handles and closes the database (EXPECTs that both work).
  ~RawStateStore();
  RawStateStore(const RawStateStore&) = delete;
  RawStateStore& operator=(const RawStateStore&) = delete;

  bool ok() const { return db_ != nullptr; }
  rocksdb::DB* db() { return db_.get(); }
  // The handle of column family `name`; REQUIRES: ok(), a StateStore name.
  rocksdb::ColumnFamilyHandle* cf(std::string_view name);

 private:
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

}  // namespace msgx::testing
