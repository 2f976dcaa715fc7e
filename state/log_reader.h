// LogReader: read-only access to the log while `msgx run` holds it open
// (docs/operations.md#commands-while-the-service-runs).
//
// It opens the log as a RocksDB secondary instance: it reads the primary's
// files without taking its lock, and sees the primary's later appends after
// CatchUp() (RocksDB's TryCatchUpWithPrimary, which also replays the
// primary's synced WAL). It works as well when no primary is running.
//
// Guarantees: never writes to the log directory's data; what it reads is a
// prefix of the log as of the last CatchUp() (or open).
//
// Thread-safety: CatchUp() must not run concurrently with other calls;
// reads may run concurrently with each other.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "state/capture_progress.h"
#include "state/log_iterator.h"
#include "state/log_layout.h"

namespace msgx {

class LogReader {
 public:
  // Opens the log at `log_dir` as a secondary. `secondary_dir` is a private
  // scratch folder for the secondary's own info log (created if missing;
  // one per reader process, e.g. "<state.dir>/log-secondary-<pid>").
  // kNotFound if there is no log at `log_dir`.
  static Result<std::unique_ptr<LogReader>> OpenSecondary(const std::string& log_dir,
                                                          const std::string& secondary_dir);
  ~LogReader();
  LogReader(const LogReader&) = delete;
  LogReader& operator=(const LogReader&) = delete;

  // Catches up with the primary and reloads the metadata below.
  Status CatchUp();

  const std::string& log_uuid() const { return log_uuid_; }
  std::uint64_t next_offset() const { return next_offset_; }
  std::optional<std::uint64_t> last_offset() const;
  const std::optional<CaptureProgress>& capture_progress() const { return capture_; }
  std::int64_t last_command_id() const { return last_command_id_; }
  std::optional<std::uint64_t> last_settings_offset() const { return last_settings_offset_; }
  // The command index as of the last CatchUp() (state/log_layout.h); its
  // upto is below the end when an older msgx appended the last records.
  Result<log_layout::CommandIndex> CommandIndex() const;

  std::unique_ptr<LogIterator> NewIterator(
      std::uint64_t from, std::uint64_t to = std::numeric_limits<std::uint64_t>::max()) const;
  Status Read(std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) const;

  // Copies the log as of the last CatchUp() (or open) into a new RocksDB at
  // `dest`, key by key, with the log's own options, flushed to its files
  // before it is renamed from `dest`.partial to `dest`; `dest` is then a log
  // LogStore::Open opens (the same log_uuid, records and metadata). kConfig
  // when `dest` exists. Returns the number of keys copied
  // (docs/operations.md#backup-and-restore).
  Result<std::uint64_t> CopyTo(const std::string& dest) const;

 private:
  explicit LogReader(std::unique_ptr<rocksdb::DB> db);
  Status Reload();

  std::unique_ptr<rocksdb::DB> db_;
  std::string log_uuid_;
  std::uint64_t next_offset_ = 0;
  std::optional<CaptureProgress> capture_;
  std::int64_t last_command_id_ = 0;
  std::optional<std::uint64_t> last_settings_offset_;
};

}  // namespace msgx
