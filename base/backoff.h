// The one backoff rule of msgx (docs/configuration.md#backoff): attempt n
// (1-based) waits steps[n-1]; past the end of `steps` the last step keeps
// doubling; every delay is capped at `cap`. With the defaults: 1s, 2s, 4s,
// 8s, 16s, 32s, 60s, 60s, …  Pure; used for seed-mode retries, event retries
// and outage stalls.
#pragma once

#include <algorithm>
#include <vector>

#include "base/config.h"

namespace msgx {

// REQUIRES: attempt >= 1.
inline Millis BackoffDelay(const std::vector<Millis>& steps, Millis cap, int attempt) {
  if (steps.empty()) return cap;
  const size_t n = static_cast<size_t>(std::max(attempt, 1));
  if (n <= steps.size()) return std::min(steps[n - 1], cap);
  Millis d = steps.back();
  for (size_t i = steps.size(); i < n && d < cap; ++i) d *= 2;
  return std::min(d, cap);
}

}  // namespace msgx
