// The key layout of the log store's RocksDB (one column family):
//
//   'R' + offset (8 bytes, big-endian)       → a LogRecord flatbuffer
//   'M' "uuid"                               → the log UUID (36 chars)
//   'M' "cap/wm"                             → capture watermark (BE int64);
//                                              its presence = capture started
//   'M' "cap/late"                           → rows captured late (BE int64)
//   'M' "cap/skip/" + first id (BE)          → SkippedRange (see EncodeRange)
//   'M' "cap/aged/" + first id (BE)          → SkippedRange, aged out
//   'M' "cmd/" + msgx_command id (BE)        → offset of its record (BE)
//   'M' "cmdlast"                            → highest msgx_command id taken
//   'M' "setlast"                            → offset of the last SETTINGS
//                                              record (BE)
//   'M' "cix/" + offset (BE)                 → "": the record there is a
//                                              command (the command index)
//   'M' "cixupto"                            → every command record below
//                                              this offset (BE) is indexed
//
// Big-endian fixed-width offsets make RocksDB's byte order the offset order.
// Only the log store writes these keys; readers (LogReader) read them.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "state/capture_progress.h"

namespace msgx::log_layout {

inline constexpr char kRecordPrefix = 'R';
inline constexpr std::string_view kUuidKey = "Muuid";
inline constexpr std::string_view kWatermarkKey = "Mcap/wm";
inline constexpr std::string_view kLateKey = "Mcap/late";
inline constexpr std::string_view kSkipPrefix = "Mcap/skip/";
inline constexpr std::string_view kAgedPrefix = "Mcap/aged/";
inline constexpr std::string_view kCommandPrefix = "Mcmd/";
inline constexpr std::string_view kLastCommandKey = "Mcmdlast";
inline constexpr std::string_view kLastSettingsKey = "Msetlast";
inline constexpr std::string_view kCommandIndexPrefix = "Mcix/";
inline constexpr std::string_view kCommandIndexUptoKey = "Mcixupto";

std::string RecordKey(std::uint64_t offset);
std::string SkipKey(std::int64_t first);
std::string AgedKey(std::int64_t first);
std::string CommandKey(std::int64_t command_id);
std::string CommandIndexKey(std::uint64_t offset);

std::string EncodeRange(const SkippedRange& r);
Result<SkippedRange> DecodeRange(std::int64_t first, std::string_view v);

// Everything the log holds besides its records, read at open.
struct LogMeta {
  std::string log_uuid;  // empty if never written
  std::uint64_t next_offset = 0;
  std::optional<CaptureProgress> capture;  // nullopt until capture first ran
  std::int64_t last_command_id = 0;
  std::optional<std::uint64_t> last_settings_offset;  // nullopt: no SETTINGS record
};
Result<LogMeta> LoadLogMeta(rocksdb::DB* db);

// The offset of the record appended for msgx_command `command_id`, if any.
Result<std::optional<std::uint64_t>> LookupCommandOffset(rocksdb::DB* db, std::int64_t command_id);

// The command index (docs/fold.md#the-command-index): the offsets of the
// command records it lists, ascending, and the offset below which it lists
// every one (0 for a log written before the index: none is listed). Records
// from `upto` on must be read to find their commands: an older msgx that
// appended them did not index them.
struct CommandIndex {
  std::vector<std::uint64_t> offsets;
  std::uint64_t upto = 0;
};
Result<CommandIndex> LoadCommandIndex(rocksdb::DB* db);

// A RocksDB status as a msgx Status (kInfra: the disk is an outage).
Status FromRocks(const rocksdb::Status& s, std::string_view what);

}  // namespace msgx::log_layout
