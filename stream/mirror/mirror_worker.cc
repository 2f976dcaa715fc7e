#include "stream/mirror/mirror_worker.h"

#include <utility>
#include <vector>

#include "base/failpoint.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/status.h"
#include "state/flight.h"

namespace msgx {
namespace {

Counter* BatchesApplied() {
  static Counter* c = Metrics::Global().GetCounter("msgx_mirror_batches_total",
                                                   "Fold batches applied to the Redis mirror");
  return c;
}

Counter* Rebuilds() {
  static Counter* c = Metrics::Global().GetCounter("msgx_mirror_rebuilds_total",
                                                   "Redis mirror rebuilds from state");
  return c;
}

}  // namespace

MirrorWorker::MirrorWorker(RedisMirror* mirror, const StateStore* store, const AirportZone* zone,
                           int rebuild_chunk)
    : mirror_(mirror),
      store_(store),
      zone_(zone),
      rebuild_chunk_(rebuild_chunk < 1 ? 1 : rebuild_chunk) {}

Result<MirrorStep> MirrorWorker::Step() {
  // "Already applied" means Redis moved since it was read: read it again and
  // decide once more. A second surprise is reported as a pause.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!cached_) {
      auto pos = mirror_->Position();
      if (!pos.ok()) return RedisFailed(pos.status());
      cached_ = *pos;
      if (pos->initialized && pos->log_uuid == mirror_->log_uuid()) offset_ = pos->offset;
    }
    const MirrorPosition pos = *cached_;
    cached_.reset();  // kept only after kApplied (Decide sets it again)
    bool reread = false;
    auto step = Decide(pos, &reread);
    if (!step.ok() || !reread) return step;
  }
  return MirrorStep{MirrorStep::Kind::kPaused, offset_,
                    "mirror moved twice while applying (another writer?)"};
}

Result<MirrorStep> MirrorWorker::RedisFailed(const Status& s) {
  cached_.reset();
  if (s.error_class() != ErrorClass::kInfra) return s;
  return MirrorStep{MirrorStep::Kind::kStalled, offset_, s.ToString()};
}

Result<MirrorStep> MirrorWorker::Decide(const MirrorPosition& pos, bool* reread) {
  if (!pos.initialized) return Rebuild("mirror uninitialized");
  if (pos.log_uuid != mirror_->log_uuid()) {
    return Rebuild("mirror holds log " + pos.log_uuid + ", not " + mirror_->log_uuid());
  }
  auto meta = store_->ReadMeta();
  if (!meta.ok()) return meta.status();
  const std::int64_t m = pos.offset;
  const std::int64_t s = meta->applied_offset;
  if (m == s) return MirrorStep{MirrorStep::Kind::kIdle, m, ""};
  if (m > s) {
    return MirrorStep{MirrorStep::Kind::kPaused, m,
                      "mirror ahead of state (offset " + std::to_string(m) + " > " +
                          std::to_string(s) + "); waiting for the fold"};
  }
  auto pending = store_->PendingCovering(m + 1);
  if (!pending.ok()) return pending.status();
  if (!*pending) {
    return Rebuild("no pending batch holds offset " + std::to_string(m + 1) + " (pruned)");
  }
  const PendingBatch& batch = **pending;
  if (batch.first_offset != m + 1) {
    return Rebuild("pending batch [" + std::to_string(batch.first_offset) + "," +
                   std::to_string(batch.last_offset) + "] does not start at mirror offset " +
                   std::to_string(m) + "+1");
  }
  MirrorBatch mb;
  mb.first = batch.first_offset;
  mb.last = batch.last_offset;
  mb.generation = batch.generation;
  mb.changes.reserve(batch.flights.size());
  for (const FlightRow& f : batch.flights) mb.changes.push_back({f.flid, f.json});
  MSGX_FAILPOINT("mirror.before_apply", std::to_string(batch.last_offset));
  if (MSGX_FAILPOINT_ERROR("mirror.before_apply", std::to_string(batch.last_offset))) {
    return Status::Internal("failpoint mirror.before_apply");
  }
  auto out = mirror_->Apply(mb);
  if (!out.ok()) return RedisFailed(out.status());
  switch (*out) {
    case ApplyOutcome::kApplied: {
      BatchesApplied()->Add(1);
      MirrorPosition next = pos;
      next.offset = mb.last;
      next.generation = mb.generation;
      cached_ = next;
      offset_ = mb.last;
      return MirrorStep{MirrorStep::Kind::kApplied, offset_, ""};
    }
    case ApplyOutcome::kAlreadyApplied:
      *reread = true;
      return MirrorStep{MirrorStep::Kind::kIdle, offset_, ""};
    case ApplyOutcome::kStaleEpoch:
      return MirrorStep{
          MirrorStep::Kind::kStalled, offset_,
          std::string(kStaleEpochMark) + ": the mirror was written by a newer leader"};
    case ApplyOutcome::kBehind:
    case ApplyOutcome::kOverlap:
    case ApplyOutcome::kUninitialized:
    case ApplyOutcome::kForeignLog:
      break;
  }
  return Rebuild("apply [" + std::to_string(mb.first) + "," + std::to_string(mb.last) +
                 "] answered " + std::string(ApplyOutcomeName(*out)));
}

Result<MirrorStep> MirrorWorker::Rebuild(const std::string& why) {
  Logger("mirror")->warn("rebuilding the Redis mirror from state: {}", why);
  Status st = mirror_->BeginRebuild();
  if (!st.ok()) return RedisFailed(st);
  std::vector<MirrorChange> chunk;
  chunk.reserve(static_cast<std::size_t>(rebuild_chunk_));
  Status redis_error;  // ForEachFlight stops at it; it is not the store's
  auto meta = store_->ForEachFlight([&](const Flight& f) -> Status {
    chunk.push_back({f.flid, FlightJson(f, *zone_)});
    if (chunk.size() < static_cast<std::size_t>(rebuild_chunk_)) return Status::Ok();
    redis_error = mirror_->AddRebuildChunk(chunk);
    chunk.clear();
    if (redis_error.ok()) MSGX_FAILPOINT("mirror.rebuild_chunk", "");
    return redis_error;
  });
  if (!redis_error.ok()) return RedisFailed(redis_error);
  if (!meta.ok()) return meta.status();
  // Also before the last chunk, so that a crash test can stop a rebuild of
  // a small state halfway (the temporary hash begun, flightInfo untouched).
  MSGX_FAILPOINT("mirror.rebuild_chunk", "last");
  st = mirror_->AddRebuildChunk(chunk);
  if (!st.ok()) return RedisFailed(st);
  st = mirror_->CommitRebuild(meta->applied_offset, meta->generation);
  if (!st.ok()) return RedisFailed(st);
  ++rebuilds_;
  Rebuilds()->Add(1);
  offset_ = meta->applied_offset;
  Logger("mirror")->info("rebuilt the Redis mirror at offset {}", offset_);
  return MirrorStep{MirrorStep::Kind::kRebuilt, offset_, ""};
}

}  // namespace msgx
