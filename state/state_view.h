// StateView: the read-only view of fold state that pure handlers decide
// against (docs/fold.md#decision: decide(view, message) → Decision).
//
// Reads return Result because the view may be backed by RocksDB: a failing
// read is kInfra and stalls the fold; it is never charged to a message.
// Every list a view returns is sorted, so handlers never see an order that
// depends on storage internals.
//
// Thread-safety: implementations say; handlers call from one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "state/flight.h"

namespace msgx {

class StateView {
 public:
  virtual ~StateView() = default;
  // The flight with this FLID, or nullopt.
  virtual Result<std::optional<Flight>> GetFlight(std::string_view flid) const = 0;
  // The same flight, shared and immutable; nullptr when absent. Views that
  // hold flights in memory override it to hand out what they hold without
  // copying it (the fold's overlay: docs/fold.md#the-flight-cache).
  virtual Result<std::shared_ptr<const Flight>> FindFlight(std::string_view flid) const {
    auto f = GetFlight(flid);
    if (!f.ok()) return f.status();
    if (!*f) return std::shared_ptr<const Flight>();
    return std::make_shared<const Flight>(std::move(**f));
  }
  // FLIDs of flights whose SODT lies in [from, to] (inclusive), sorted.
  virtual Result<std::vector<std::string>> FlightsBySodt(MicrosSinceEpoch from,
                                                         MicrosSinceEpoch to) const = 0;
  // The reference record (type, key), or nullopt.
  virtual Result<std::optional<ReferenceRecord>> GetReference(std::string_view type,
                                                              std::string_view key) const = 0;
  // Keys of all records of `type`, sorted.
  virtual Result<std::vector<std::string>> ReferenceKeys(std::string_view type) const = 0;
};

}  // namespace msgx
