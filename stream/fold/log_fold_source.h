// The fold's view of the log store (state/log_store.h, state/log_reader.h):
// log records as FoldInputs, and the LogSource seam (replay reads, the
// quarantine and exhaust index, the settings in force at an offset).
//
// Quarantine index: this source keeps the quarantine, exhaust and settings
// commands in memory (BuildQuarantineIndex, at open and whenever the fold
// sees a new quarantine or exhaust command). With the log's command index
// (state/log_layout.h, docs/fold.md#the-command-index) it reads only the
// command records the index lists and the records after its `upto`; without
// it, the whole log.
//
// Thread-safety: single-threaded (the fold's thread).
#pragma once

#include <functional>
#include <map>
#include <utility>

#include "state/log_iterator.h"
#include "state/log_layout.h"
#include "stream/fold/fold_input.h"

namespace msgx {

// Converts one verified log record (DecodeLogRecord, LogIterator::record())
// to the fold's input. kInternal for a command body this msgx does not know.
Result<FoldInput> ToFoldInput(std::uint64_t offset, const fb::LogRecord& record);

// Reads up to `max` entries from `from` (LogStore::Read / LogReader::Read).
using LogReadFn =
    std::function<Status(std::uint64_t from, std::size_t max, std::vector<LogEntry>*)>;
// Visits up to `max` records from `from` without copying them
// (LogCursor::Scan): the service's fold.
using LogScanFn =
    std::function<Status(std::uint64_t from, std::size_t max, const LogVisitor& each)>;

// The log's command index (LogStore::CommandIndex, LogReader::CommandIndex).
using CommandIndexFn = std::function<Result<log_layout::CommandIndex>()>;

class LogFoldSource final : public LogSource {
 public:
  // Without `index`, BuildQuarantineIndex reads the whole log.
  explicit LogFoldSource(LogScanFn scan, CommandIndexFn index = nullptr)
      : scan_(std::move(scan)), index_(std::move(index)) {}
  // Reads through copies of the records (the tools and tests).
  explicit LogFoldSource(LogReadFn read, CommandIndexFn index = nullptr);

  // Reads up to `max` records from `from` as FoldInputs.
  Status ReadBatch(std::uint64_t from, std::size_t max, std::vector<FoldInput>* out) const;
  // Finds the quarantine, exhaust and settings commands in the log.
  Status BuildQuarantineIndex();

  Result<std::optional<FoldInput>> ReadAt(std::int64_t offset) const override;
  std::optional<std::string> QuarantineReason(std::int64_t offset, int sub) const override;
  std::optional<std::string> ExhaustReason(std::int64_t offset) const override;
  std::optional<InForce> SettingsInForceAt(std::int64_t offset) const override;

 private:
  // Adds `in` to the maps below when it is a command they keep.
  void Take(const FoldInput& in);

  LogScanFn scan_;
  CommandIndexFn index_;
  std::map<std::pair<std::int64_t, int>, std::string> quarantine_;  // {offset, sub}
  std::map<std::int64_t, std::string> exhausted_;
  std::map<std::int64_t, SettingsCommand> settings_;
};

}  // namespace msgx
