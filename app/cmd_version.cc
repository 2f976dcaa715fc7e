// `msgx version` (also `msgx --version`, set up in main.cc): prints the
// binary's version, fold version and schema version (app/version.h); exit 0.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command.h"
#include "app/version.h"

namespace msgx::app {

void RegisterVersion(CLI::App& root, const GlobalOptions& /*global*/, int* exit_code) {
  CLI::App* cmd =
      root.add_subcommand("version", "Print the version, fold version and schema version");
  cmd->callback([exit_code] {
    std::cout << VersionText();
    *exit_code = 0;
  });
}

}  // namespace msgx::app
