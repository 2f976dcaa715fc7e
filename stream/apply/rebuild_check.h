// RebuildCheck: a state store rebuilt from the log is checked against what
// PostgreSQL already holds (docs/commit-protocol.md#recovery).
//
// When the state store is behind PostgreSQL's pipeline.applied_offset (the
// state directory was lost, or restored from an old copy), the fold must
// not hand PostgreSQL those ranges again. Instead:
//   - Load() reads PostgreSQL's fold_batch ends above the state's applied
//     offset, up to pipeline.applied_offset;
//   - cut_offsets() are those ends: the fold cuts its batches there
//     (FoldOptions::cut_offsets), so the chained digest d(end) exists on
//     both sides;
//   - Verify() compares, for every end the fold has passed, the digest in
//     the state store with PostgreSQL's. A mismatch within the same fold
//     version is kInternal (a determinism bug or a different log): the
//     service stops with both digests in the message. A different fold
//     version is logged at WARN (an upgrade changed decisions); since the
//     digest is chained, every later end then differs as well, so from
//     there on nothing is compared (diverged_at()).
// The applier itself never re-inserts those ranges: it starts at
// pipeline.applied_offset + 1.
//
// Thread-safety: one thread (the fold's).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "state/state_store.h"
#include "stream/pg/pg_session.h"

namespace msgx {

struct PgBatchEnd {
  std::int64_t first_offset = 0;
  std::int64_t last_offset = 0;
  std::int64_t fold_version = 0;
  std::string digest_hex;
};

class RebuildCheck {
 public:
  // fold_batch rows with state_applied < last_offset <= pipeline.applied_offset
  // of `pipeline`; empty when the state is not behind. kInfra on an outage.
  static Result<RebuildCheck> Load(PgSession* pg, const std::string& pipeline,
                                   std::int64_t state_applied);

  explicit RebuildCheck(std::vector<PgBatchEnd> ends) : ends_(std::move(ends)) {}

  // The ends above `applied` only: those the fold can still cut at.
  RebuildCheck Above(std::int64_t applied) const;

  bool pending() const { return next_ < ends_.size(); }
  std::int64_t pg_applied() const { return ends_.empty() ? -1 : ends_.back().last_offset; }
  std::vector<std::int64_t> cut_offsets() const;
  // Checks every end at or below `applied` not checked yet.
  Status Verify(const StateStore& store, std::int64_t applied);
  int verified() const { return verified_; }
  // The end where an older fold version's decisions first differed; -1: none.
  std::int64_t diverged_at() const { return diverged_at_; }

 private:
  std::vector<PgBatchEnd> ends_;
  std::size_t next_ = 0;
  int verified_ = 0;
  std::int64_t diverged_at_ = -1;
};

}  // namespace msgx
