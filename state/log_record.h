// LogRecordData: the plain C++ form of one log record, and its encoding to
// and from the flatbuffer of schemas/log_record.fbs.
//
// Writers (capture, command intake, jobs) build a LogRecordData; the log
// store stamps the append time and encodes it. Readers get the stored bytes
// and look at them through DecodeLogRecord(), which verifies the buffer
// first, so a corrupt record is a Status, never a crash.
//
// Thread-safety: values and free functions; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "schemas/log_record_generated.h"
#include "state/decision_settings.h"

namespace msgx {

struct ReplayArgs {
  std::vector<std::int64_t> mailbox_ids;
  bool operator==(const ReplayArgs&) const = default;
};
struct QuarantineArgs {
  std::uint64_t offset = 0;
  std::string reason;
  int sub = -1;  // >= 0: only that message of the REPLAY command at offset
  bool operator==(const QuarantineArgs&) const = default;
};
struct HistorySweepArgs {
  MicrosSinceEpoch cutoff = 0;
  bool operator==(const HistorySweepArgs&) const = default;
};
struct IdentityExpiryArgs {
  MicrosSinceEpoch before = 0;
  bool operator==(const IdentityExpiryArgs&) const = default;
};
struct ExhaustArgs {
  std::uint64_t offset = 0;
  int attempts = 0;
  std::string reason;
  bool operator==(const ExhaustArgs&) const = default;
};
// The decision settings in force from this record on
// (docs/fold.md#settings-in-the-log).
struct SettingsArgs {
  DecisionSettings settings;
  bool in_force_from_start = false;  // also stands for the records before it
  bool operator==(const SettingsArgs&) const = default;
};
using CommandArgs = std::variant<ReplayArgs, QuarantineArgs, HistorySweepArgs, IdentityExpiryArgs,
                                 ExhaustArgs, SettingsArgs>;

struct CommandData {
  CommandArgs args;
  std::string issued_by;
  // msgx_command.id; 0: appended by msgx itself; negative: a scheduled
  // job's command of one airport day (stream/jobs/daily_sweep.h).
  std::int64_t command_id = 0;
  MicrosSinceEpoch issued_at = 0;
  bool operator==(const CommandData&) const = default;
};

struct LogRecordData {
  fb::RecordKind kind = fb::RecordKind::MAILBOX_MESSAGE;
  std::int64_t mailbox_id = 0;
  std::string raw;  // exact bytes of the message, never decoded
  std::optional<MicrosSinceEpoch> received_at;
  bool late = false;
  std::optional<CommandData> command;  // set iff kind == COMMAND

  static LogRecordData Message(std::int64_t mailbox_id, std::string raw,
                               std::optional<MicrosSinceEpoch> received_at, bool late = false);
  static LogRecordData Command(CommandData command);
  bool operator==(const LogRecordData&) const = default;
};

// Serialises `data` with `append_micros` as its append time.
std::string EncodeLogRecord(const LogRecordData& data, MicrosSinceEpoch append_micros);

// Verifies `bytes` and returns a view into them, or, when they do not start
// on FlatBuffers' alignment (a RocksDB iterator's value need not;
// base/aligned_bytes.h), into a copy of them in *storage. The view is valid
// while what it views lives unchanged. `storage` may be null only for bytes
// held in a std::string, which are always aligned (kInternal otherwise).
// kInternal when the buffer does not verify: the log is corrupt.
Result<const fb::LogRecord*> DecodeLogRecord(std::string_view bytes, std::string* storage);

// The inverse of EncodeLogRecord, for tests and tools; *append_micros
// receives the append time when non-null.
Result<LogRecordData> ToLogRecordData(std::string_view bytes,
                                      MicrosSinceEpoch* append_micros = nullptr);
// The same from a record DecodeLogRecord verified.
Result<LogRecordData> ToLogRecordData(const fb::LogRecord& rec,
                                      MicrosSinceEpoch* append_micros = nullptr);

// The settings of the record `bytes` read at `offset` (a log's
// last_settings_offset()); kInternal when it is not a SETTINGS record.
Result<SettingsArgs> ToSettingsArgs(std::uint64_t offset, std::string_view bytes);

}  // namespace msgx
