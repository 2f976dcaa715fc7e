// LogIterator: reads log records in offset order over [from, to).
//
// The iterator sees a consistent point-in-time view of the log (RocksDB's
// implicit iterator snapshot): records appended after it was created are not
// seen. Records are verified as they are read; a record that does not verify
// ends the iteration with a kInternal status().
//
// Thread-safety: one thread per iterator. The store it came from must
// outlive it.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "schemas/log_record_generated.h"

namespace msgx {

// One stored record: its offset and its bytes (a LogRecord flatbuffer).
struct LogEntry {
  std::uint64_t offset = 0;
  std::string bytes;
  // A verified view into `bytes`; valid while this entry lives unchanged.
  const fb::LogRecord* record() const;
};

class LogIterator {
 public:
  // REQUIRES: db outlives the iterator.
  LogIterator(rocksdb::DB* db, std::uint64_t from,
              std::uint64_t to = std::numeric_limits<std::uint64_t>::max());
  LogIterator(const LogIterator&) = delete;
  LogIterator& operator=(const LogIterator&) = delete;

  // Renews the view to the log as of now and moves to `from`, keeping the
  // upper bound. Cheaper than a new iterator: RocksDB rebuilds the
  // iterator only when its set of memtables and table files has changed
  // since the last view (Iterator::Refresh).
  void Renew(std::uint64_t from);

  bool Valid() const { return valid_; }
  // REQUIRES: Valid().
  void Next();
  std::uint64_t offset() const { return offset_; }
  // The record's bytes; valid until the next Next().
  std::string_view bytes() const;
  // REQUIRES: Valid(). A verified view into bytes(), or into a copy of
  // them when they are not aligned for FlatBuffers (base/aligned_bytes.h);
  // valid until the next Next().
  const fb::LogRecord* record() const { return record_; }
  // OK, or why iteration stopped early.
  const Status& status() const { return status_; }

 private:
  // it_ = a new RocksDB iterator over the log as of now, bounded by upper_.
  void NewRocksIterator();
  // Moves to `from`, or leaves the iterator invalid when `from` >= to_.
  void SeekTo(std::uint64_t from);
  void Load();

  rocksdb::DB* db_;
  std::string lower_;
  std::string upper_;
  rocksdb::Slice upper_slice_;
  std::unique_ptr<rocksdb::Iterator> it_;
  std::uint64_t to_;
  bool valid_ = false;
  std::uint64_t offset_ = 0;
  const fb::LogRecord* record_ = nullptr;
  std::string aligned_;  // the record's bytes when the iterator's were not aligned
  Status status_;
};

// Appends up to `max` entries with offset >= from to *out.
Status ReadLog(rocksdb::DB* db, std::uint64_t from, std::size_t max, std::vector<LogEntry>* out);

// Appends up to `max` entries from `it`'s position to *out; `it`'s status().
Status ReadEntries(LogIterator* it, std::size_t max, std::vector<LogEntry>* out);

// Calls `each` with the offset and the verified record of up to `max`
// records from `it`'s position, without copying them; the record is valid
// only during the call. The first error of `each`, else `it`'s status().
using LogVisitor = std::function<Status(std::uint64_t offset, const fb::LogRecord& record)>;
Status ScanEntries(LogIterator* it, std::size_t max, const LogVisitor& each);

}  // namespace msgx
