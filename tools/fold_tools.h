// Shared by `msgx refold` and `msgx inspect`: open the log read-only (as a
// RocksDB secondary, so they work while the service runs) and fold it into
// a scratch state store, optionally up to an offset and cutting batches at
// given offsets (the live store's batch ends) so digests can be compared
// there.
//
// Thread-safety: single-threaded command code.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "codecs/sis_decoder.h"
#include "codecs/time_zone.h"
#include "state/log_reader.h"
#include "state/state_store.h"
#include "stream/fold/fold.h"
#include "stream/fold/log_fold_source.h"
#include "stream/fold/read_ahead.h"
#include "stream/fold/sis_fold_decoder.h"

namespace msgx::app {

// Everything a scratch fold needs, owned together.
class ScratchFold {
 public:
  // Opens `<state.dir>/log` as a secondary and a fresh scratch store in
  // `scratch_dir` (created; must not hold a store).
  static Result<std::unique_ptr<ScratchFold>> Open(const Config& config,
                                                   const std::string& scratch_dir);
  ~ScratchFold();

  // Folds records [applied+1, until] (until = -1: to the end of the log),
  // each with the settings in force at its offset. Stops early, OK, at a
  // seed-mode head that holds (fold().held()).
  // When `cuts` is non-empty, a batch also ends at each cut offset and
  // on_cut(offset, digest) is called there; returning false stops early.
  Status Run(std::int64_t until, const std::vector<std::int64_t>& cuts,
             const std::function<bool(std::int64_t, const std::string&)>& on_cut);

  StateStore& store() { return *store_; }
  Fold& fold() { return *fold_; }
  // The zone of the settings in force at the fold's applied offset.
  const AirportZone& zone() const { return fold_->zone(); }
  std::int64_t log_end() const;  // last offset in the log, -1 when empty

 private:
  ScratchFold() = default;
  std::string scratch_dir_;
  std::unique_ptr<LogReader> log_;
  std::unique_ptr<LogFoldSource> source_;
  std::unique_ptr<StateStore> store_;
  std::unique_ptr<Fold> fold_;
  FoldReadAhead::Options read_ahead_;  // the fold's decoders and fallback
};

// A scratch directory under `<state.dir>` unique to this process.
std::string ScratchDirFor(const Config& config, const std::string& what);

}  // namespace msgx::app
