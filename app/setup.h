// Start-up shared by every command: load the configuration (file + MSGX_*),
// then install JSON-lines logging at the configured level, which --log-level
// overrides, and size the process's one RocksDB block cache to
// `state.block-cache-mb` (state/store_memory.h) before any store is
// opened, so every command that opens one holds to the same bound. On failure
// it prints "msgx: <key>: <why>" to stderr.
#pragma once

#include "app/command.h"
#include "base/config.h"
#include "base/result.h"

namespace msgx::app {

Result<Config> LoadAndInit(const GlobalOptions& global);

}  // namespace msgx::app
