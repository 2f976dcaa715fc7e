// RebuildGate: whether the fold may fold before PostgreSQL has answered
// (docs/commit-protocol.md#recovery, docs/operations.md#standby).
//
// A rebuild (a state store behind PostgreSQL) must cut its batches where
// PostgreSQL's fold_batch rows end, so RebuildCheck (stream/apply/
// rebuild_check.h) has to be known before the fold passes the first of
// them. A process that has not reached PostgreSQL yet (it is down, or
// unreachable) still folds when it can tell that no rebuild is under way:
//   - the state store has folded before (applied >= 0), and
//   - no rebuild marker (`marker_path`) names an offset above `applied`:
//     the marker is written when a loaded check finds the state behind
//     PostgreSQL, and removed once the fold has caught up with it, so a
//     rebuild cut short by a crash and restarted while PostgreSQL is down
//     waits again.
// Otherwise BeforeStep() returns kInfra (the fold stalls, saying why) until
// the loader has the check. The loader must not block: the service's
// (RebuildFetcher, stream/service/rebuild_fetcher.h) reads PostgreSQL on a
// thread of its own and answers kInfra until it has. BeforeStep() asks it
// until it has answered, then never again. Of the check, only the ends above the fold's applied
// offset at that moment are kept: ends the fold passed before the check was
// known (a state store restored from an old copy while PostgreSQL was down)
// cannot be compared, and the applier's idempotent writes make their
// re-application harmless.
//
// Thread-safety: one thread (the fold's).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "state/state_store.h"
#include "stream/apply/rebuild_check.h"

namespace msgx {

class RebuildGate {
 public:
  // PostgreSQL's batch ends (RebuildCheck::Load), kInfra while not known.
  using Loader = std::function<Result<RebuildCheck>()>;

  struct Options {
    Loader load;  // empty: no PostgreSQL, nothing to check
    std::string marker_path;
  };
  explicit RebuildGate(Options options);

  // Before a fold step from `applied`. OK: the fold may step; if a check
  // with batch ends to cut at was loaded by this call, `cuts` receives them
  // (ascending). kInfra: the fold must wait (the message says why); any
  // other class: a bug reading PostgreSQL or the marker.
  Status BeforeStep(std::int64_t applied, std::vector<std::int64_t>* cuts);
  // After a fold step that reached `applied`: compares the digests at the
  // ends passed (kInternal on a mismatch) and clears the marker once the
  // rebuild has caught up. `caught_up` is set when that happened now.
  Status AfterStep(const StateStore& store, std::int64_t applied, bool* caught_up);

  bool loaded() const { return loaded_; }
  // The batch digests compared so far.
  int verified() const { return check_ ? check_->verified() : 0; }

 private:
  std::optional<std::int64_t> ReadMarker() const;
  Status WriteMarker(std::int64_t until) const;
  Status RemoveMarker() const;

  Options o_;
  bool loaded_ = false;
  // The marker as it was at construction: only this gate writes it, and
  // only once loaded, when it is no longer read.
  std::optional<std::int64_t> marker_;
  std::optional<RebuildCheck> check_;  // set when loaded and pending
};

}  // namespace msgx
