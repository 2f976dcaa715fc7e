// `msgx run [--config F]`: the service (stream/service/run_service.h).
#include <CLI/CLI.hpp>

#include "app/command.h"
#include "app/setup.h"
#include "stream/service/run_service.h"

namespace msgx::app {

void RegisterRun(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* cmd =
      root.add_subcommand("run", "The service: capture, fold and HTTP; SIGTERM drains and exits 0");
  cmd->callback([&global, exit_code] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    *exit_code = RunService(*config);
  });
}

}  // namespace msgx::app
