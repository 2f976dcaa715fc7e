// Logging: JSON lines through spdlog, one object per line:
//   {"ts":"2026-11-30T02:33:03.123456Z","level":"info","component":"capture",
//    "msg":"...","trace":"4711"}
// "trace" is the mailbox id or event key the line is about
// (docs/operations.md#logs), and is omitted when empty. Lines go to stderr so
// that stdout stays for command output (`msgx decode --json`, `msgx dev env`).
//
// Thread-safety: all functions are safe from any thread.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace msgx {

// Installs the JSON-lines sink and sets the level ("trace", "debug", "info",
// "warn", "error", "off"). Returns kConfig for an unknown level. Safe to call
// more than once (tests do).
Status InitLogging(std::string_view level);

// A logger for one component ("capture", "fold", "applier", ...), created on
// first use and shared afterwards.
std::shared_ptr<spdlog::logger> Logger(const std::string& component);

// Formats one message with a trace id, for use as
//   Logger("fold")->warn("{}", WithTrace("4711", "duplicate body differs"));
std::string WithTrace(std::string_view trace, std::string_view message);

}  // namespace msgx
