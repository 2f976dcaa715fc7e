#include "stream/fold/flight_cache.h"

#include <utility>

namespace msgx {

std::optional<std::shared_ptr<const Flight>> FlightCache::Find(std::string_view flid) {
  const std::string key(flid);
  if (auto it = young_.find(key); it != young_.end()) return it->second;
  auto it = old_.find(key);
  if (it == old_.end()) return std::nullopt;
  std::shared_ptr<const Flight> f = std::move(it->second);
  old_.erase(it);
  Put(flid, f);
  return f;
}

void FlightCache::Put(std::string_view flid, std::shared_ptr<const Flight> flight) {
  std::string key(flid);
  old_.erase(key);
  young_[std::move(key)] = std::move(flight);
  if (young_.size() >= generation_size_) {
    old_ = std::move(young_);
    young_ = Map();
  }
}

void FlightCache::Clear() {
  young_.clear();
  old_.clear();
}

}  // namespace msgx
