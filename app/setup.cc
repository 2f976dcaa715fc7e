#include "app/setup.h"

#include <iostream>

#include "base/log.h"
#include "state/store_memory.h"

namespace msgx::app {

Result<Config> LoadAndInit(const GlobalOptions& global) {
  Result<Config> config = LoadConfig(global.config_path, ProcessEnvironment());
  if (!config.ok()) {
    std::cerr << "msgx: " << config.status().message() << "\n";
    return config;
  }
  const std::string& level = global.log_level.empty() ? config->log_level : global.log_level;
  Status s = InitLogging(level);
  if (!s.ok()) {
    std::cerr << "msgx: --log-level " << s.message() << "\n";
    return s;
  }
  SharedBlockCache()->SetCapacity(static_cast<std::size_t>(config->state_block_cache_mb) << 20);
  return config;
}

}  // namespace msgx::app
