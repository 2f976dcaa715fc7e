// Differences between two state stores, for `msgx refold --verify`
// (docs/fold.md#reading-a-divergence-report, #the-upgrade-diff).
//
// Both stores are walked once, side by side, in their common order (column
// family, then key): memory stays bounded whatever their size.
//
// Thread-safety: single-threaded command code; the stores must not be
// written to during a walk (a read-only or scratch store).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

#include "base/result.h"
#include "state/airport_zone.h"
#include "state/outcome.h"
#include "state/state_store.h"

namespace msgx::app {

// Called for each entry that differs: `a`/`b` is nullopt where that store
// has no entry for (cf, key). Returning false stops the walk.
using EntryDiffVisitor =
    std::function<bool(std::string_view cf, std::string_view key, std::optional<std::string_view> a,
                       std::optional<std::string_view> b)>;

// Visits every differing entry; a scan error of either store is returned.
// A flight stored in the older flatbuffer form and the same flight in the
// compact form do not differ (SameStoredFlight, state/state_codec.h).
// With [first_cf, end_cf), the column families of those indexes only
// (StateStore::NewEntryCursor).
Status DiffEntries(const StateStore& a, const StateStore& b, const EntryDiffVisitor& visit,
                   std::size_t first_cf = 0, std::size_t end_cf = StateStore::kColumnFamilies);

// "STATE CLASS (error) at offset N", one line.
std::string DescribeOutcome(const Outcome& o);

struct UpgradeDiffCounts {
  std::int64_t messages = 0;    // outcomes that change
  std::int64_t flights = 0;     // flights whose fields or lists change
  std::int64_t references = 0;  // reference records that change
};

// Writes what the current fold version changes against what the live
// store holds, to `out`, in the stores' order: flights (by FLID), reference
// records (by type and key), then messages (by mailbox id):
//   flight 15
//     DELY: (none) -> [{"CODE":"YY",...}]
//   reference AIRL CA
//     NAME: "Air China" -> (none)
//   message 4 (offset 3): DEAD UNSUPPORTED (...) at offset 3 -> SUCCEEDED at offset 3
// Values are the canonical JSON (state/flight.h) rendered in `zone`; a field
// or list absent on one side is "(none)". A flight whose only change is its
// version (the offset that last changed it) is not listed.
Result<UpgradeDiffCounts> WriteUpgradeDiff(const StateStore& live, const StateStore& refold,
                                           const AirportZone& zone, std::ostream& out);

}  // namespace msgx::app
