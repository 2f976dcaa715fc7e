// The fold's view of the log store (state/log_store.h, state/log_reader.h):
// log records as FoldInputs, and the LogSource seam (replay reads, the
// quarantine and exhaust index, the settings in force at an offset).
//
// Quarantine index: the log store does not keep one yet, so this source
// builds it in memory from the quarantine commands in the log
// (BuildQuarantineIndex, at open and whenever the fold sees a new
// quarantine command). Quarantine commands are rare, so the scan is cheap
// in practice; moving the index into the log store (written with the
// command, docs/fold.md#quarantine) is left to the log's owner.
//
// Thread-safety: single-threaded (the fold's thread).
#pragma once

#include <functional>
#include <map>
#include <utility>

#include "state/log_iterator.h"
#include "stream/fold/fold_input.h"

namespace msgx {

// Converts one stored log record to the fold's input. kInternal when the
// record does not verify (a corrupt log).
Result<FoldInput> ToFoldInput(std::uint64_t offset, std::string_view bytes);

// Reads up to `max` entries from `from` (LogStore::Read / LogReader::Read).
using LogReadFn =
    std::function<Status(std::uint64_t from, std::size_t max, std::vector<LogEntry>*)>;

class LogFoldSource final : public LogSource {
 public:
  explicit LogFoldSource(LogReadFn read) : read_(std::move(read)) {}

  // Reads up to `max` records from `from` as FoldInputs.
  Status ReadBatch(std::uint64_t from, std::size_t max, std::vector<FoldInput>* out) const;
  // Scans the whole log for quarantine, exhaust and settings commands.
  Status BuildQuarantineIndex();

  Result<std::optional<FoldInput>> ReadAt(std::int64_t offset) const override;
  std::optional<std::string> QuarantineReason(std::int64_t offset, int sub) const override;
  std::optional<std::string> ExhaustReason(std::int64_t offset) const override;
  std::optional<InForce> SettingsInForceAt(std::int64_t offset) const override;

 private:
  LogReadFn read_;
  std::map<std::pair<std::int64_t, int>, std::string> quarantine_;  // {offset, sub}
  std::map<std::int64_t, std::string> exhausted_;
  std::map<std::int64_t, SettingsCommand> settings_;
};

}  // namespace msgx
