// LogCursor: reads the log step after step, as the fold's thread does
// (docs/fold.md#reading-the-log), with one RocksDB iterator kept across
// reads instead of a new one for each.
//
// Each Read sees every record appended before it began. Between reads the
// kept iterator holds on to the memtables and table files of its last view,
// so a compaction's inputs are deleted only at the next Read (or when the
// cursor goes); a service that stops appending keeps at most one such set.
//
// Thread-safety: one thread at a time. REQUIRES: the store's database
// outlives the cursor.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "state/log_iterator.h"

namespace msgx {

class LogCursor {
 public:
  explicit LogCursor(rocksdb::DB* db) : db_(db) {}
  LogCursor(const LogCursor&) = delete;
  LogCursor& operator=(const LogCursor&) = delete;

  // Appends up to `max` entries with offset >= from to *out, as ReadLog
  // (state/log_iterator.h) does.
  Status Read(std::uint64_t from, std::size_t max, std::vector<LogEntry>* out);
  // The same without copies: ScanEntries (state/log_iterator.h) from `from`.
  Status Scan(std::uint64_t from, std::size_t max, const LogVisitor& each);

 private:
  // The kept iterator, renewed and moved to `from`.
  LogIterator* At(std::uint64_t from);

  rocksdb::DB* db_;
  std::unique_ptr<LogIterator> it_;
};

}  // namespace msgx
