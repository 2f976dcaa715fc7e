#include "stream/apply/rebuild_check.h"

#include <map>

#include "base/log.h"
#include "state/digest.h"
#include "stream/fold/fold.h"

namespace msgx {

Result<RebuildCheck> RebuildCheck::Load(PgSession* pg, const std::string& pipeline,
                                        std::int64_t state_applied) {
  std::vector<PgBatchEnd> ends;
  Status s = pg->Run([&](pqxx::dbtransaction& tx) {
    pqxx::result r = tx.exec_params(
        "SELECT f.first_offset, f.last_offset, f.fold_version, f.digest FROM fold_batch f, "
        "pipeline p WHERE p.name = $1 AND f.last_offset > $2 AND f.last_offset <= "
        "p.applied_offset ORDER BY f.last_offset",
        pipeline, state_applied);
    for (const auto& row : r) {
      ends.push_back({row[0].as<std::int64_t>(), row[1].as<std::int64_t>(),
                      row[2].as<std::int64_t>(), row[3].as<std::string>()});
    }
  });
  if (!s.ok()) return s;
  return RebuildCheck(std::move(ends));
}

RebuildCheck RebuildCheck::Above(std::int64_t applied) const {
  std::vector<PgBatchEnd> ends;
  for (std::size_t i = next_; i < ends_.size(); ++i) {
    if (ends_[i].last_offset > applied) ends.push_back(ends_[i]);
  }
  return RebuildCheck(std::move(ends));
}

std::vector<std::int64_t> RebuildCheck::cut_offsets() const {
  std::vector<std::int64_t> out;
  out.reserve(ends_.size());
  for (const PgBatchEnd& e : ends_) out.push_back(e.last_offset);
  return out;
}

Status RebuildCheck::Verify(const StateStore& store, std::int64_t applied) {
  if (!pending() || ends_[next_].last_offset > applied) return Status::Ok();
  auto local = store.BatchEnds();
  if (!local.ok()) return local.status();
  std::map<std::int64_t, const StateStore::BatchEnd*> by_end;
  for (const auto& b : *local) by_end[b.end_offset] = &b;
  for (; next_ < ends_.size() && ends_[next_].last_offset <= applied; ++next_) {
    const PgBatchEnd& e = ends_[next_];
    auto it = by_end.find(e.last_offset);
    if (it == by_end.end()) {
      return Status::Internal("rebuild: no batch ends at offset " + std::to_string(e.last_offset) +
                              " although PostgreSQL's fold_batch does; cannot compare digests");
    }
    const std::string mine = ToHex(it->second->digest);
    if (mine == e.digest_hex) {
      ++verified_;
      continue;
    }
    if (diverged_at_ >= 0) continue;  // carried on from an older version's difference
    const std::string msg = "rebuild: chained digest differs at offset " +
                            std::to_string(e.last_offset) + ": PostgreSQL fold_batch has " +
                            e.digest_hex + " (fold version " + std::to_string(e.fold_version) +
                            "), the rebuilt state has " + mine + " (fold version " +
                            std::to_string(kFoldVersion) + ")";
    if (e.fold_version != kFoldVersion) {
      // The digest is chained: every later end differs too, so none can be
      // compared any more (docs/commit-protocol.md#recovery).
      Logger("rebuild")->warn(
          "{} — a different fold version decided it; the digests of later batch ends cannot "
          "be compared",
          msg);
      diverged_at_ = e.last_offset;
      continue;
    }
    return Status::Internal(msg);
  }
  return Status::Ok();
}

}  // namespace msgx
