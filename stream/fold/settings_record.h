// RecordSettings: at start-up, the process that holds the log (the state.dir
// lock) makes the log say which decision settings are in force, before the
// fold decides anything else (docs/fold.md#settings-in-the-log).
//
// When the configuration's settings differ from the last SETTINGS record,
// a new one is appended and the log line names what changed. A log with no
// SETTINGS record (written before they were recorded) gets one that stands
// for its earlier records too: the configuration at the first start of this
// version is the best knowledge there is of what decided them.
//
// Thread-safety: call once, before the stages start.
#pragma once

#include <cstdint>

#include "state/decision_settings.h"
#include "state/log_store.h"

namespace msgx {

struct RecordedSettings {
  std::uint64_t offset = 0;  // of the SETTINGS record in force
  bool appended = false;     // by this call
};

// kInfra when the log cannot be read or written (retry later); kInternal
// when the last SETTINGS record does not decode.
Result<RecordedSettings> RecordSettings(const DecisionSettings& wanted, LogStore* log);

}  // namespace msgx
