// StateOverlay: the in-memory layer a fold batch decides against. Reads see
// the batch's own pending changes first, then the StateStore (or nothing,
// for a store-less overlay in tests). TakeBatch() hands the pending changes
// to StateStore::Commit() as one BatchWrite and empties the overlay.
//
// Flights read from the store, and a batch's flights once Committed() says
// its commit succeeded, stay in a bounded FlightCache of committed state
// (docs/fold.md#the-flight-cache), so the next batch does not read and
// decode them again. REQUIRES: the base store is written only through the
// BatchWrites this overlay hands out (the fold is the single writer).
//
// Thread-safety: single-threaded (the fold is the single writer).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "state/state_store.h"
#include "stream/fold/flight_cache.h"
#include "stream/fold/handlers/decision.h"

namespace msgx {

class StateOverlay final : public StateView {
 public:
  // `base` may be null (empty state); it must outlive the overlay.
  explicit StateOverlay(const StateStore* base) : base_(base) {}

  // StateView.
  Result<std::optional<Flight>> GetFlight(std::string_view flid) const override;
  Result<std::shared_ptr<const Flight>> FindFlight(std::string_view flid) const override;
  Result<std::vector<std::string>> FlightsBySodt(MicrosSinceEpoch from,
                                                 MicrosSinceEpoch to) const override;
  Result<std::optional<ReferenceRecord>> GetReference(std::string_view type,
                                                      std::string_view key) const override;
  Result<std::vector<std::string>> ReferenceKeys(std::string_view type) const override;

  Result<std::optional<IdentityBinding>> GetBinding(const std::string& key) const;
  Result<std::optional<SenderSeqn>> GetSender(const std::string& sndr) const;
  Result<std::optional<Outcome>> GetOutcome(std::int64_t mailbox_id) const;

  // Applies a decision's flight and reference changes, in order.
  void Apply(const Decision& d);
  void PutBinding(IdentityBinding b);
  void DeleteBinding(const std::string& key);
  void PutSender(const std::string& sndr, SenderSeqn s);
  void PutOutcome(Outcome o);

  // Number of pending outcomes (the batch's message count so far).
  std::size_t pending_outcomes() const { return pending_.outcomes.size(); }
  bool empty() const { return pending_.empty(); }
  // Moves the pending changes out; `meta` becomes the batch's meta. The
  // cached committed flights give BatchWrite::old_sodts.
  BatchWrite TakeBatch(const StateMeta& meta);
  // Drops the pending changes (after a failed batch).
  void Discard() { pending_ = BatchWrite(); }
  // `write` (from TakeBatch) is committed: its flights are the store's now.
  void Committed(const BatchWrite& write);
  // Forgets the cached committed flights (the store may have changed under
  // the overlay: Fold::Open()).
  void ForgetCommitted() { committed_flights_.Clear(); }

  // Flights per cache generation: at most twice as many are held.
  static constexpr std::size_t kFlightCacheGeneration = 2048;

 private:
  const StateStore* base_;
  BatchWrite pending_;
  mutable FlightCache committed_flights_{kFlightCacheGeneration};
};

}  // namespace msgx
