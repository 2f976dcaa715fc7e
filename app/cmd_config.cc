// `msgx config`: prints the effective configuration (defaults < file < env),
// or the first bad key. Operators use it to check a file before a restart.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command.h"
#include "app/setup.h"

namespace msgx::app {

void RegisterConfig(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* cmd = root.add_subcommand("config", "Print the effective configuration");
  cmd->callback([&global, exit_code] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    std::cout << DescribeConfig(*config);
    *exit_code = 0;
  });
}

}  // namespace msgx::app
