// LeadershipKeeper: holds the PostgreSQL half of the single-writer rule for
// `msgx run` (docs/commit-protocol.md#single-writer), on its own thread.
//
//   - TryFirst() tries once, without waiting: OK whether or not this process
//     leads afterwards (it says once, at WARN, why not), kConfig when the
//     pipeline row belongs to another log (a different log pointed at the
//     same database must not write; the service stops).
//   - Run() then tries every `retry` while it does not lead, and checks the
//     lock connection every `retry` while it does. When it is lost
//     (PostgreSQL restarted or unreachable) epoch() drops to 0 at once, so
//     the applier and the dispatchers pause; it re-acquires with a new epoch
//     when it can. Another process may lead meanwhile: then this one waits,
//     and its stale epoch can commit nothing (CheckEpoch).
//   - StepDownIfStale(reason): a writer's refusal that names a stale epoch
//     (kStaleEpochMark) means another process was granted a newer epoch
//     before this one's check noticed the lost lock; epoch() drops to 0 at
//     once, so every stage that needs leadership pauses, and Run() closes
//     the lock session and tries again, as after a lost lock.
//
// The fold and capture do not need this lock: they write only the state
// directory, which the state.dir lock protects, so they run while this
// process does not lead, a PostgreSQL outage included
// (docs/operations.md#standby, docs/crash-safety.md#outages).
//
// Thread-safety: epoch() and waiting() from any thread; the rest from one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "base/stopper.h"
#include "stream/pg/pg_leadership.h"

namespace msgx {

class LeadershipKeeper {
 public:
  LeadershipKeeper(std::string url, std::string log_uuid, Stopper* stopper,
                   std::chrono::milliseconds retry = std::chrono::milliseconds(1000));

  Status TryFirst();
  // Until the stopper stops; returns kConfig if the pipeline row turns out
  // to belong to another log.
  Status Run();

  // The current epoch, 0 when not leading.
  std::int64_t epoch() const { return epoch_.load(std::memory_order_acquire); }
  // Why this process does not lead right now ("" when it does).
  std::string waiting() const;
  // Steps down when `reason` (a stalled writer's) contains kStaleEpochMark;
  // does nothing otherwise or when not leading. From any thread.
  void StepDownIfStale(std::string_view reason);

 private:
  // One attempt; true when leading afterwards.
  Result<bool> TryOnce(bool* said);

  PgLeadership leadership_;
  Stopper* stopper_;
  std::chrono::milliseconds retry_;
  bool said_ = false;  // the current reason not to lead was logged
  std::atomic<std::int64_t> epoch_{0};
  std::atomic<bool> stepped_down_{false};  // set by StepDownIfStale, cleared by Run()
  mutable std::mutex mu_;
  std::string waiting_;  // guarded by mu_
};

}  // namespace msgx
