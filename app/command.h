// The CLI's seam: each `msgx <command>` lives in its own app/cmd_<name>.cc and
// registers itself on the root CLI11 app through one function declared here.
//
// Contract for a Register function:
//   - it adds exactly one subcommand (with its own nested subcommands, if any);
//   - its callback stores the process exit status in *exit_code:
//       0 success, 1 the command ran and found a problem (a bad message, a
//       divergence, ...), 2 usage or configuration error, other codes as the
//       command documents (refold uses 3);
//   - it never calls exit(); main() returns *exit_code.
#pragma once

#include <string>

namespace CLI {
class App;
}

namespace msgx::app {

// Options every command accepts; filled in by CLI11 before any callback runs.
struct GlobalOptions {
  std::string config_path;  // --config F (also MSGX_CONFIG)
  std::string log_level;    // --log-level; empty = from configuration
};

void RegisterDecode(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterMigrate(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterDev(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterConfig(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterRun(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterReplay(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterStatus(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterRefold(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterInspect(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterBackfill(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterBench(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterBackup(CLI::App& root, const GlobalOptions& global, int* exit_code);
void RegisterVersion(CLI::App& root, const GlobalOptions& global, int* exit_code);

}  // namespace msgx::app
