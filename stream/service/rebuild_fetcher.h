// RebuildFetcher: reads PostgreSQL's batch ends for the rebuild check
// (stream/apply/rebuild_check.h) on a thread of its own, retrying an outage
// every `retry`, so that a PostgreSQL that does not answer (a connect that
// hangs in a network partition) never blocks the fold, which asks through
// RebuildGate (stream/service/rebuild_gate.h).
//
// Thread-safety: Take() from any one thread; the destructor stops and joins.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/result.h"
#include "base/stopper.h"
#include "stream/apply/rebuild_check.h"

namespace msgx {

class RebuildFetcher {
 public:
  // Starts reading the ends above `state_applied` of pipeline `pipeline`;
  // calls `ready` (from its thread) once Take() has an answer.
  RebuildFetcher(std::string url, std::string pipeline, std::int64_t state_applied,
                 std::chrono::milliseconds retry, std::function<void()> ready);
  ~RebuildFetcher();
  RebuildFetcher(const RebuildFetcher&) = delete;
  RebuildFetcher& operator=(const RebuildFetcher&) = delete;

  // The check once read; kInfra with the last error until then; another
  // class when reading failed for a bug (not retried).
  Result<RebuildCheck> Take();

 private:
  void Loop(std::string url, const std::string& pipeline, std::int64_t state_applied);

  std::chrono::milliseconds retry_;
  std::function<void()> ready_;
  Stopper stop_;
  std::mutex mu_;
  std::optional<Result<RebuildCheck>> result_;  // guarded by mu_
  std::string last_error_;                      // guarded by mu_
  std::thread thread_;
};

}  // namespace msgx
