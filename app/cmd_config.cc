// `msgx config`: prints the effective configuration (defaults < file < env),
// or the first bad key. Operators use it to check a file before a restart.
// `msgx config --reference` prints the key table of
// docs/configuration.md#keys-and-defaults (key, type, default, floor) with an
// empty effect column, for a new key's row; tests/unit/config_reference_test.cc
// holds the page to the code.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command.h"
#include "app/setup.h"
#include "base/config_reference.h"

namespace msgx::app {
namespace {

void PrintReference() {
  std::cout << "| key | type | default | floor | effect |\n|---|---|---|---|---|\n";
  for (const KeyReference& k : ConfigReference()) {
    std::cout << "| `" << k.key << "` | " << k.type << " | "
              << (k.default_value.empty() ? "empty" : "`" + k.default_value + "`") << " | "
              << (k.floor.empty() ? "—" : "`" + k.floor + "`") << " |  |\n";
  }
}

}  // namespace

void RegisterConfig(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* cmd = root.add_subcommand("config", "Print the effective configuration");
  auto reference = std::make_shared<bool>(false);
  cmd->add_flag("--reference", *reference,
                "Print the table of keys (type, default, floor) of docs/configuration.md");
  cmd->callback([&global, exit_code, reference] {
    if (*reference) {
      PrintReference();
      *exit_code = 0;
      return;
    }
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
