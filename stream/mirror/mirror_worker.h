// MirrorWorker: keeps the Redis mirror (state/redis_mirror.h) in step with
// the state store, one fold batch at a time
// (docs/commit-protocol.md#output-stages).
//
// Each Step() compares the mirror's position M with the state's applied
// offset S and does at most one thing:
//   Redis unreachable (kInfra)          kStalled: the caller retries with a
//                                       capped backoff; nothing is charged;
//   mirror uninitialized, or written
//   from another log UUID               rebuild;
//   M == S                              kIdle;
//   M > S on this log (the state store
//   is being rebuilt)                   kPaused until the fold catches up;
//   M < S                               apply the pending batch starting at
//                                       M+1 in one Lua call (kApplied). When
//                                       that batch is pruned, cut at another
//                                       offset, or Redis answers behind /
//                                       overlap / uninitialized / foreign:
//                                       rebuild.
// A rebuild fills the mirror's temporary hash from one consistent snapshot
// of the state (StateStore::ForEachFlight), in chunks, and commits it with
// that snapshot's applied offset and generation, so the mirror offset always
// names exactly the flights the hash holds (kRebuilt). A rebuild cut short by
// an outage or a crash leaves flightInfo as it was; the next Step starts it
// again.
//
// Step() never sleeps and never loops over more than one batch: the caller
// decides how long to wait after kIdle, kPaused and kStalled.
//
// Errors (the Result's Status): state store failures, and Redis replies that
// are not an outage (kInternal: a bug).
//
// Failpoints: "mirror.before_apply" (arg: the batch's last offset; also an
// "error" action, the mirror failing as a bug would) before
// each Apply; "mirror.rebuild_chunk" (arg "") between rebuild chunks.
//
// Thread-safety: not thread-safe; one worker thread owns it (and its mirror).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/result.h"
#include "state/airport_zone.h"
#include "state/redis_mirror.h"
#include "state/state_store.h"

namespace msgx {

struct MirrorStep {
  enum class Kind { kApplied, kRebuilt, kIdle, kPaused, kStalled };
  Kind kind = Kind::kIdle;
  std::int64_t offset = -1;  // mirror offset after the step (-1: unknown or empty)
  std::string error;         // kStalled: the outage; kPaused: why
};

class MirrorWorker {
 public:
  // REQUIRES: all outlive the worker; rebuild_chunk >= 1 (flights per
  // AddRebuildChunk).
  MirrorWorker(RedisMirror* mirror, const StateStore* store, const AirportZone* zone,
               int rebuild_chunk = 1000);
  MirrorWorker(const MirrorWorker&) = delete;
  MirrorWorker& operator=(const MirrorWorker&) = delete;

  Result<MirrorStep> Step();

  // The last known mirror offset (-1: unknown).
  std::int64_t offset() const { return offset_; }
  // Rebuilds committed by this worker.
  std::int64_t rebuilds() const { return rebuilds_; }

 private:
  // One decision against `pos`; sets *reread when Redis answered "already
  // applied" and the position must be read again.
  Result<MirrorStep> Decide(const MirrorPosition& pos, bool* reread);
  Result<MirrorStep> Rebuild(const std::string& why);
  // kStalled for an outage (kInfra); any other Redis error is returned.
  Result<MirrorStep> RedisFailed(const Status& s);

  RedisMirror* mirror_;
  const StateStore* store_;
  const AirportZone* zone_;
  int rebuild_chunk_;
  // The position after the last kApplied; every other outcome drops it so
  // that the next Step reads Redis again (and sees a FLUSHALL while idle).
  std::optional<MirrorPosition> cached_;
  std::int64_t offset_ = -1;
  std::int64_t rebuilds_ = 0;
};

}  // namespace msgx
