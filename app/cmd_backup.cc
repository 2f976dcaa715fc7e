// `msgx backup DIR` and `msgx restore DIR` (docs/operations.md#backup-and-restore).
//
// backup: an online copy of the log while `msgx run` runs (or not): the log
// opened as a RocksDB secondary (state/log_reader.h, no lock taken), caught
// up with the primary once, copied key by key into DIR (LogReader::CopyTo).
// Exit 0 with "backup: log <uuid>, <n> records, <k> keys in DIR"; 2 when DIR
// exists or the configuration is bad; 1 when the log cannot be read.
//
// restore: with the service stopped (it takes the state.dir lock without
// waiting; exit 1 while `msgx run` holds it), moves <state.dir>/log and
// <state.dir>/state aside (to <name>.before-restore-<unix seconds>, with a
// -2, -3, … after it when a restore in the same second took that name) and
// copies DIR into <state.dir>/log. The next `msgx run` rebuilds the state
// from the restored log, checked against PostgreSQL's batch digests, and
// captures again the mailbox rows after the log's watermark. Exit 0; 2 when
// DIR is not a log; 1 on I/O errors.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>

#include "app/command.h"
#include "app/setup.h"
#include "base/file_lock.h"
#include "state/log_reader.h"

namespace msgx::app {
namespace {

namespace fs = std::filesystem;

int ExitFor(const Status& s) { return s.error_class() == ErrorClass::kConfig ? 2 : 1; }

int Backup(const Config& config, const std::string& dir) {
  const std::string scratch =
      (fs::temp_directory_path() / ("msgx-backup-" + std::to_string(::getpid()))).string();
  int rc = 0;
  {
    auto log = LogReader::OpenSecondary(config.state_dir + "/log", scratch);
    Status s = log.ok() ? (*log)->CatchUp() : log.status();
    Result<std::uint64_t> keys = s.ok() ? (*log)->CopyTo(dir) : Result<std::uint64_t>(s);
    if (!keys.ok()) {
      std::cerr << "msgx backup: " << keys.status().ToString() << "\n";
      rc = ExitFor(keys.status());
    } else {
      std::cout << "backup: log " << (*log)->log_uuid() << ", " << (*log)->next_offset()
                << " records, " << *keys << " keys in " << dir << "\n";
    }
  }
  std::error_code ec;
  fs::remove_all(scratch, ec);
  return rc;
}

// The suffix that moves a restore's old log and state aside:
// ".before-restore-<unix seconds>", then "-2", "-3", … when an earlier
// restore in the same second took that name for either of them.
std::string AsideSuffix(const std::string& state_dir, std::int64_t unix_seconds) {
  const std::string base = ".before-restore-" + std::to_string(unix_seconds);
  for (int n = 1;; ++n) {
    std::string suffix = n == 1 ? base : base + "-" + std::to_string(n);
    std::error_code ec;
    const bool taken = fs::exists(fs::path(state_dir) / ("log" + suffix), ec) ||
                       fs::exists(fs::path(state_dir) / ("state" + suffix), ec);
    if (!taken) return suffix;
  }
}

int Restore(const Config& config, const std::string& dir) {
  std::error_code ec;
  if (!fs::exists(fs::path(dir) / "CURRENT", ec)) {
    std::cerr << "msgx restore: " << dir << " is not a log backup (no CURRENT)\n";
    return 2;
  }
  fs::create_directories(config.state_dir, ec);
  auto lock = FileLock::TryAcquire(config.state_dir + "/LOCK.msgx");
  if (!lock.ok()) {
    std::cerr << "msgx restore: stop msgx run first: state.dir " << lock.status().message() << "\n";
    return 1;
  }
  const std::string suffix =
      AsideSuffix(config.state_dir, std::chrono::duration_cast<std::chrono::seconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
  for (const char* name : {"log", "state"}) {
    const fs::path p = fs::path(config.state_dir) / name;
    if (!fs::exists(p, ec)) continue;
    fs::rename(p, p.string() + suffix, ec);
    if (ec) {
      std::cerr << "msgx restore: move " << p << " aside: " << ec.message() << "\n";
      return 1;
    }
    std::cout << "moved " << p.string() << " to " << p.string() + suffix << "\n";
  }
  const fs::path log = fs::path(config.state_dir) / "log";
  fs::copy(dir, log, fs::copy_options::recursive, ec);
  if (ec) {
    std::cerr << "msgx restore: copy " << dir << " to " << log << ": " << ec.message() << "\n";
    return 1;
  }
  std::cout << "restored " << dir << " to " << log.string()
            << "; the state store is rebuilt at the next start\n";
  return 0;
}

}  // namespace

void RegisterBackup(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  auto dir = std::make_shared<std::string>();
  CLI::App* backup =
      root.add_subcommand("backup", "Copy the log to DIR, also while the service runs");
  backup->add_option("DIR", *dir, "Where the copy goes (must not exist)")->required();
  backup->callback([&global, exit_code, dir] {
    Result<Config> config = LoadAndInit(global);
    *exit_code = config.ok() ? Backup(*config, *dir) : 2;
  });
  auto from = std::make_shared<std::string>();
  CLI::App* restore =
      root.add_subcommand("restore", "Put a backup of the log in place (service stopped)");
  restore->add_option("DIR", *from, "A directory `msgx backup` wrote")->required();
  restore->callback([&global, exit_code, from] {
    Result<Config> config = LoadAndInit(global);
    *exit_code = config.ok() ? Restore(*config, *from) : 2;
  });
}

}  // namespace msgx::app
