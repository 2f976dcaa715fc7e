// RedisMirror: flight state mirrored to Redis for readers, batch by batch
// (docs/commit-protocol.md#output-stages; what the dispatcher relies on:
// docs/dispatch.md#the-mirror-before-dispatch-gate).
//
// Keys:
//   flightInfo            hash FLID → flight JSON (what readers use)
//   msgx:mirror           hash {log_uuid, offset, generation, epoch}: the
//                         last log offset whose effects flightInfo holds,
//                         the log it came from, the snapshot generation, and
//                         the leader epoch of the last write
//   msgx:mirror:rebuild   a temporary hash while a rebuild is in progress
//
// Guarantees:
//   - Apply() is one Lua call: it changes flightInfo and moves the offset
//     from a-1 to b atomically, or changes nothing. Readers never see half a
//     batch, and the dispatcher's mirror-before-dispatch gate never sees an
//     offset the hash does not hold.
//   - A rebuild fills the temporary hash in chunks, then one Lua call
//     renames it over flightInfo and sets offset, generation and log UUID.
//     Readers see the old hash until that moment, then the whole new one.
//
// What the caller does with each ApplyOutcome (the mirror worker):
//   kApplied          go on;
//   kAlreadyApplied   offset >= b: a redo after a crash, or Redis ahead on
//                     the same log while state is rebuilt: skip (this is the
//                     "pause until state catches up");
//   kBehind, kUninitialized, kForeignLog, kOverlap
//                     rebuild from state;
//   kStaleEpoch       a newer leader wrote the mirror (set_epoch): stall,
//                     write nothing (docs/operations.md#who-writes).
//
// Thread-safety: not thread-safe (it owns one RedisClient).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "state/redis_client.h"

namespace msgx {

struct MirrorChange {
  std::string flid;
  std::optional<std::string> json;  // nullopt: the flight was deleted
};

// The flight changes of fold batch [first, last], net per FLID.
struct MirrorBatch {
  std::int64_t first = 0;
  std::int64_t last = 0;
  std::int64_t generation = 0;  // snapshot generation at `last`
  std::vector<MirrorChange> changes;
};

struct MirrorPosition {
  bool initialized = false;  // msgx:mirror exists
  std::string log_uuid;
  std::int64_t offset = -1;
  std::int64_t generation = 0;
};

enum class ApplyOutcome {
  kApplied,
  kAlreadyApplied,
  kBehind,
  kOverlap,
  kUninitialized,
  kForeignLog,
  kStaleEpoch,
};

std::string_view ApplyOutcomeName(ApplyOutcome o);

class RedisMirror {
 public:
  static constexpr const char* kHashKey = "flightInfo";
  static constexpr const char* kMetaKey = "msgx:mirror";
  static constexpr const char* kRebuildKey = "msgx:mirror:rebuild";

  // REQUIRES: `client` outlives the mirror.
  RedisMirror(RedisClient* client, std::string log_uuid);

  Result<MirrorPosition> Position();

  // The leader epoch every write carries. Apply and CommitRebuild refuse to
  // write when the mirror holds a higher one (a stale leader) and record
  // theirs otherwise; 0 (the default) is unfenced: no PostgreSQL, so no
  // leadership.
  void set_epoch(std::int64_t epoch) { epoch_ = epoch; }

  // Applies `batch` iff the mirror is on this log at offset batch.first-1.
  Result<ApplyOutcome> Apply(const MirrorBatch& batch);

  // Rebuild, in three steps; a crash in between leaves flightInfo as it was.
  Status BeginRebuild();
  // REQUIRES: BeginRebuild() was called; every json is present.
  Status AddRebuildChunk(const std::vector<MirrorChange>& flights);
  Status CommitRebuild(std::int64_t offset, std::int64_t generation);

  // The log this mirror writes for (Position().log_uuid differs: a foreign
  // log, rebuild).
  const std::string& log_uuid() const { return log_uuid_; }

 private:
  std::string StaleText() const;

  RedisClient* client_;
  std::string log_uuid_;
  std::int64_t epoch_ = 0;
};

}  // namespace msgx
