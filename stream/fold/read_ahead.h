// FoldReadAhead: reads a stretch of the log for a fold and decodes its
// messages on a second thread, a few batches ahead of the fold, so that the
// fold's own thread only decides and commits (docs/fold.md#decoding-ahead).
// `msgx refold` and `msgx inspect --at` use it (tools/fold_tools.h).
//
// The batches are planned up front: from `from` to `until`, each ending
// after `batch_max` records or at the next offset of `cuts`, whichever
// comes first (what the caller would read itself). Each message is decoded
// with the settings in force at its offset (LogSource::SettingsInForceAt,
// else `fallback`), as the fold would; a quarantined one is left to the
// fold (its bytes once killed the process: they are not decoded at all).
//
// The decode runs off the fold's thread, so the crash guard
// (stream/fold/crash_guard.h) does not attribute a death during it to the
// record. That is why the service's fold decodes inline, and why this is
// for re-folds of records the service has already decided.
//
// Thread-safety: Next() from one thread. The source must outlive this and
// its index must not change while it runs (a re-fold builds it once).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/result.h"
#include "state/decision_settings.h"
#include "stream/fold/active_settings.h"
#include "stream/fold/fold_input.h"
#include "stream/fold/log_fold_source.h"

namespace msgx {

class FoldReadAhead {
 public:
  struct Options {
    std::int64_t batch_max = 1000;
    std::size_t depth = 4;  // batches decoded and waiting, at most
    // The settings where the log holds none in force (FoldOptions::settings),
    // and how the fold builds decoders and zones (FoldOptions).
    DecisionSettings fallback;
    DecoderFactory make_decoder;
    const AirportZone* zone = nullptr;
  };

  // Starts the thread on [from, until] (until >= from - 1; cuts ascending).
  FoldReadAhead(const LogFoldSource* source, std::int64_t from, std::int64_t until,
                std::vector<std::int64_t> cuts, Options options);
  // Stops the thread and waits for it.
  ~FoldReadAhead();
  FoldReadAhead(const FoldReadAhead&) = delete;
  FoldReadAhead& operator=(const FoldReadAhead&) = delete;

  // The next planned batch, in order; empty after the last. The log's read
  // error (kInfra, or kInternal for a corrupt record) is returned once, and
  // nothing is read after it.
  Result<std::vector<FoldInput>> Next();
  // Hands a batch the fold is done with back, to be freed on the read-ahead
  // thread (freeing decoded messages is a few percent of a re-fold).
  void Recycle(std::vector<FoldInput> batch);

 private:
  void Run();
  // Decodes the batch's messages; a settings record that cannot be used
  // leaves its messages to the fold, which reports it.
  void Decode(std::vector<FoldInput>* batch);

  const LogFoldSource* source_;
  const std::int64_t until_;
  const std::vector<std::int64_t> cuts_;
  const Options options_;
  std::int64_t next_ = 0;                           // the read thread's next offset
  std::shared_ptr<const ActiveSettings> settings_;  // the read thread's

  std::mutex mu_;
  std::condition_variable ready_;  // a batch was queued, or the thread ended
  std::condition_variable room_;   // a batch was taken, or stop_
  std::deque<Result<std::vector<FoldInput>>> queue_;
  std::vector<std::vector<FoldInput>> spent_;  // Recycle()d, freed by Run()
  bool done_ = false;                          // the thread queued its last batch (or an error)
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace msgx
