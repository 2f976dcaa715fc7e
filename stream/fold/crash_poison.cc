#include "stream/fold/crash_poison.h"

#include "base/log.h"
#include "stream/fold/crash_guard.h"

namespace msgx {
namespace {

// "log offset 12", or "message 1 of the replay at log offset 12".
std::string Describe(const DeathKey& key) {
  std::string at = "log offset " + std::to_string(key.offset);
  if (key.sub < 0) return at;
  return "message " + std::to_string(key.sub) + " of the replay at " + at;
}

}  // namespace

Result<int> QuarantineRepeatedDeaths(const std::string& deaths_path, std::int64_t applied,
                                     LogStore* log, const LogSource& source, int threshold) {
  auto deaths = CrashGuard::ReadDeaths(deaths_path);
  if (!deaths.ok()) return deaths.status();
  std::vector<LogRecordData> commands;
  for (const auto& [key, d] : *deaths) {
    if (key.offset <= applied) continue;
    const std::string what = Describe(key);
    if (d.count < threshold) {
      Logger("crash-guard")
          ->warn(
              "the process died on {} ({} recorded death(s), signal {}); it will be "
              "quarantined at {}",
              what, d.count, d.last_signal, threshold);
      continue;
    }
    if (source.QuarantineReason(key.offset, key.sub)) continue;  // already quarantined
    QuarantineArgs q;
    q.offset = static_cast<std::uint64_t>(key.offset);
    q.sub = key.sub;
    q.reason = "crashed the processor " + std::to_string(d.count) + " times (signal " +
               std::to_string(d.last_signal) + ")";
    Logger("crash-guard")->error("quarantining {}: {}", what, q.reason);
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
