// OutputStages: what `msgx run` does after the fold
// (docs/commit-protocol.md#output-stages), each stage on its own thread:
//   mirror      pending batches → Redis (stream/mirror/mirror_worker.h);
//   applier     pending batches → PostgreSQL (stream/apply/pg_applier.h), and
//               pruning of pending batches applied and mirrored longer ago
//               than pipeline.pending-retention;
//   dispatch    one dispatcher per target (KAFKA:msg, KAFKA:schd, KAFKA:ref),
//               outbox → Kafka (stream/dispatch/dispatcher.h), gated by the mirror
//               offset read from Redis
//               (docs/dispatch.md#the-mirror-before-dispatch-gate).
// The applier and the dispatchers run only while this process leads
// (LeadershipKeeper::epoch() > 0); the mirror runs whenever Redis answers.
// An outage stalls a stage (capped backoff, /readyz says which); a bug-class
// failure (kInternal: SQLSTATE 22/23, a digest mismatch, a lost pending
// batch) stops the whole service loudly through `fatal`.
//
// Thread-safety: Start/Stop/Join from the service thread; Folded() from the
// fold's; the status readers from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/config.h"
#include "base/stopper.h"
#include "state/airport_zone.h"
#include "state/state_store.h"
#include "stream/pg/leadership_keeper.h"

namespace msgx::app {

struct StageHealth {
  std::string name;
  std::atomic<bool> stalled{false};
  std::atomic<bool> fatal{false};
  std::atomic<std::int64_t> position{-1};  // offset (mirror, applier) or sent total
  std::atomic<std::int64_t> dead{0};       // dispatchers: events sent to the DLQ
};

class OutputStages {
 public:
  struct Deps {
    const Config* config = nullptr;
    StateStore* store = nullptr;
    const AirportZone* zone = nullptr;
    std::string log_uuid;
    LeadershipKeeper* leader = nullptr;
    Stopper* service = nullptr;  // stopped on a fatal stage error
  };

  // Builds the producers (kConfig when a producer safety setting is
  // weakened, naming the key: docs/dispatch.md#producer-safety-settings) and
  // starts the threads. Stages whose service is not configured
  // (redis.url / kafka.bootstrap-servers empty) are not started, and say so.
  static Result<std::unique_ptr<OutputStages>> Start(const Deps& deps);
  ~OutputStages();

  // New batches were committed: wake the mirror and the applier.
  void Folded();
  // Stops and joins every stage.
  void Stop();

  // Readiness problems ("" none), for /readyz.
  std::vector<std::string> Problems() const;
  const std::vector<std::unique_ptr<StageHealth>>& health() const { return health_; }

 private:
  OutputStages() = default;
  StageHealth* AddHealth(const std::string& name);
  void RunMirror(StageHealth* h);
  void RunApplier(StageHealth* h);
  void RunDispatcher(const std::string& target, StageHealth* h);

  Deps deps_;
  Stopper mirror_wake_;
  Stopper applier_wake_;
  std::vector<std::unique_ptr<Stopper>> dispatch_wakes_;
  std::vector<std::unique_ptr<StageHealth>> health_;
  StageHealth* mirror_health_ = nullptr;  // in health_; null without Redis
  std::vector<std::thread> threads_;
  struct Publishers;
  std::unique_ptr<Publishers> publishers_;
};

}  // namespace msgx::app
