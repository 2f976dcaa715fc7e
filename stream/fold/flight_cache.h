// FlightCache: the fold's bounded memory of committed flights
// (docs/fold.md#the-flight-cache).
//
// A message usually changes a flight that an earlier batch changed, and
// reading it back from RocksDB means a Get and a decode of the stored
// flatbuffer into maps. The cache keeps the committed flights the fold read
// or wrote recently, shared and immutable, so that the next batch finds them
// in memory. It only ever holds committed state: the fold puts a batch's
// flights after their commit succeeded, and reads from the store, never a
// pending batch's changes. So it is invisible to every decision: with or
// without it, the fold decides the same.
//
// Bound: two generations of at most `generation_size` entries each. Puts go
// to the young generation; a hit in the old one moves the entry to the young
// one; when the young generation is full it becomes the old one and the old
// one is dropped. So at most 2 × generation_size flights are held, and those
// used in the last generation_size puts are always among them. An absent
// flight is held too (a null pointer), so that a new FLID is read once.
//
// Thread-safety: single-threaded (the fold's thread).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "state/flight.h"

namespace msgx {

class FlightCache {
 public:
  // REQUIRES: generation_size > 0.
  explicit FlightCache(std::size_t generation_size) : generation_size_(generation_size) {}

  // nullopt: not cached; a null pointer: cached as absent.
  std::optional<std::shared_ptr<const Flight>> Find(std::string_view flid);
  // Records the committed flight `flid` (null: absent or deleted).
  void Put(std::string_view flid, std::shared_ptr<const Flight> flight);
  void Clear();
  std::size_t size() const { return young_.size() + old_.size(); }

 private:
  using Map = std::unordered_map<std::string, std::shared_ptr<const Flight>>;
  std::size_t generation_size_;
  Map young_;
  Map old_;
};

}  // namespace msgx
