#include "stream/fold/settings_record.h"

#include "base/log.h"
#include "state/log_record.h"

namespace msgx {

Result<RecordedSettings> RecordSettings(const DecisionSettings& wanted, LogStore* log) {
  auto lg = Logger("settings");
  const std::optional<std::uint64_t> last_offset = log->last_settings_offset();
  std::optional<DecisionSettings> last;
  if (last_offset) {
    std::vector<LogEntry> one;
    if (Status s = log->Read(*last_offset, 1, &one); !s.ok()) return s;
    if (one.empty() || one[0].offset != *last_offset) {
      return Status::Internal("the log's last SETTINGS record at offset " +
                              std::to_string(*last_offset) + " is missing");
    }
    auto args = ToSettingsArgs(*last_offset, one[0].bytes);
    if (!args.ok()) return args.status();
    last = std::move(args->settings);
  }
  if (last && *last == wanted) return RecordedSettings{*last_offset, false};

  SettingsArgs args;
  args.settings = wanted;
  args.in_force_from_start = !last;
  const bool earlier_records = !last && log->next_offset() > 0;
  const LogRecordData record = LogRecordData::Command(CommandData{args, "msgx:settings", 0, 0});
  auto offset = log->AppendCommands({&record, 1});
  if (!offset.ok()) return offset.status();
  if (last) {
    lg->warn("settings changed at offset {}: {}", *offset, DescribeSettingsChange(*last, wanted));
  } else if (earlier_records) {
    lg->warn(
        "the log holds no SETTINGS record (written before settings were recorded): this "
        "configuration's settings are recorded at offset {} as in force from offset 0, the best "
        "knowledge there is of what decided the {} earlier records",
        *offset, *offset);
  } else {
    lg->info("settings recorded at offset {}", *offset);
  }
  return RecordedSettings{*offset, true};
}

}  // namespace msgx
