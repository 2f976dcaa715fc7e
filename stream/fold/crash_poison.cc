#include "stream/fold/crash_poison.h"

#include "base/log.h"
#include "stream/fold/crash_guard.h"

namespace msgx {

Result<int> QuarantineRepeatedDeaths(const std::string& deaths_path, std::int64_t applied,
                                     LogStore* log, const LogSource& source, int threshold) {
  auto deaths = CrashGuard::ReadDeaths(deaths_path);
  if (!deaths.ok()) return deaths.status();
  std::vector<LogRecordData> commands;
  for (const auto& [offset, d] : *deaths) {
    if (offset <= applied) continue;
    if (d.count < threshold) {
      Logger("crash-guard")
          ->warn(
              "the process died on log offset {} ({} recorded death(s), signal {}); it will "
              "be quarantined at {}",
              offset, d.count, d.last_signal, threshold);
      continue;
    }
    if (source.QuarantineReason(offset)) continue;  // already quarantined
    QuarantineArgs q;
    q.offset = static_cast<std::uint64_t>(offset);
    q.reason = "crashed the processor " + std::to_string(d.count) + " times (signal " +
               std::to_string(d.last_signal) + ")";
    Logger("crash-guard")->error("quarantining log offset {}: {}", offset, q.reason);
    commands.push_back(LogRecordData::Command(CommandData{q, "msgx:crash-guard", 0, 0}));
  }
  if (!commands.empty()) {
    auto first = log->AppendCommands(commands);
    if (!first.ok()) return first.status();
  }
  Status pruned = CrashGuard::Prune(deaths_path, applied);
  if (!pruned.ok()) return pruned;
  return static_cast<int>(commands.size());
}

}  // namespace msgx
