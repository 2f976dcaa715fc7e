// msgx: one binary, one subcommand per operator action
// (docs/operations.md#commands).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>

#include "app/command.h"
#include "app/version.h"
#include "base/malloc_tuning.h"

namespace {

int Main(int argc, char** argv) {
  CLI::App root{"msgx: event-sourced stream processor for AODB SIS messages"};
  root.require_subcommand(1);
  root.set_help_all_flag("--help-all", "Expand all help");
  // CLI11 prints the text and exits 0 before it asks for a subcommand.
  std::string version_text = msgx::app::VersionText();
  version_text.pop_back();  // CLI11 adds the last newline
  root.set_version_flag("--version", version_text, "Print the version, fold and schema version");
  // Global options work before or after the subcommand (`msgx run --config
  // F`): subcommands added below inherit this and pass what they do not
  // know to the root.
  root.fallthrough();

  msgx::app::GlobalOptions global;
  root.add_option("--config", global.config_path, "YAML configuration file")
      ->envname("MSGX_CONFIG");
  root.add_option("--log-level", global.log_level,
                  "trace|debug|info|warn|error (overrides configuration)");

  int exit_code = 0;
  // One line per command; each lives in app/cmd_<name>.cc.
  msgx::app::RegisterConfig(root, global, &exit_code);
  msgx::app::RegisterMigrate(root, global, &exit_code);
  msgx::app::RegisterDev(root, global, &exit_code);
  msgx::app::RegisterDecode(root, global, &exit_code);
  msgx::app::RegisterRun(root, global, &exit_code);
  msgx::app::RegisterReplay(root, global, &exit_code);
  msgx::app::RegisterStatus(root, global, &exit_code);
  msgx::app::RegisterRefold(root, global, &exit_code);
  msgx::app::RegisterInspect(root, global, &exit_code);
  msgx::app::RegisterBackfill(root, global, &exit_code);
  msgx::app::RegisterBench(root, global, &exit_code);
  msgx::app::RegisterBackup(root, global, &exit_code);
  msgx::app::RegisterVersion(root, global, &exit_code);

  try {
    root.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = root.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}

}  // namespace

int main(int argc, char** argv) {
  msgx::TuneAllocatorForBatches();  // before any thread starts
  // Errors are values inside msgx; this is the last net for a library's.
  try {
    return Main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "msgx: internal error: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "msgx: internal error\n");
  }
  return 1;
}
