// Crash poison at start-up (docs/crash-safety.md#crash-poison): a record on
// which the process died twice, by a fatal signal the CrashGuard recorded,
// is quarantined.
//
// QuarantineRepeatedDeaths reads the deaths file and, for every {offset,
// sub} whose record is not yet folded (offset > applied), has at least
// `threshold` recorded deaths and is not quarantined already, appends one
// QUARANTINE log command (issued by "msgx:crash-guard", reason "crashed the
// processor N times (signal S)") with that offset and sub: sub -1 quarantines
// the whole record, sub k >= 0 only the k-th message of the REPLAY command
// at offset. The caller then rebuilds the quarantine index, so the fold, a
// re-fold and `--until` skip the record (or that one replayed message) when
// they reach it: it ends DEAD, QUARANTINED, quarantined:<reason>. Finally
// the deaths file is pruned of offsets <= applied.
//
// kill -9, OOM kills and power loss record nothing, so they never
// quarantine anything.
#pragma once

#include <cstdint>
#include <string>

#include "base/result.h"
#include "state/log_store.h"
#include "stream/fold/fold_input.h"

namespace msgx {

// Returns how many quarantine commands it appended.
Result<int> QuarantineRepeatedDeaths(const std::string& deaths_path, std::int64_t applied,
                                     LogStore* log, const LogSource& source, int threshold = 2);

}  // namespace msgx
