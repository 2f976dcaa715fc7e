// PollCadence: how long capture waits before its next mailbox poll
// (docs/capture.md#poll-cadence). The mailbox is someone else's database,
// with no triggers to tell msgx a row has come, so capture polls it:
//   - a poll that read a full batch: again at once (the caller's `more`);
//   - a poll that captured or skipped something: again after `busy`
//     (capture.busy-poll-interval), since rows are flowing;
//   - a poll that found nothing new (or waits at a gap): twice the last
//     wait, from `busy` up to `idle` (pipeline.poll-interval).
// So while rows flow msgx sends the mailbox at most 1/`busy` polls a
// second, and an idle mailbox one poll per `idle` after log2(idle/busy)
// empty polls. Pure; one thread.
#pragma once

#include <algorithm>

#include "base/config.h"

namespace msgx {

class PollCadence {
 public:
  // Empty polls at `busy` after rows were found, before the waits double.
  static constexpr int kBusyEmptyPolls = 10;

  // `busy` is raised to at least 1 ms and lowered to at most `idle`.
  PollCadence(Millis busy, Millis idle)
      : idle_(std::max(idle, Millis{1})), busy_(std::clamp(busy, Millis{1}, idle_)), last_(idle_) {}

  // The wait after a poll that did not ask for more; `found` = it captured
  // or skipped something.
  Millis Next(bool found) {
    if (found) {
      empty_polls_ = 0;
      last_ = busy_;
    } else if (empty_polls_ < kBusyEmptyPolls) {
      ++empty_polls_;
      last_ = busy_;
    } else {
      last_ = std::min(idle_, std::max(busy_, last_ * 2));
    }
    return last_;
  }

  Millis idle() const { return idle_; }

 private:
  Millis idle_;
  Millis busy_;
  Millis last_;  // the last wait; idle at start, so a quiet start polls at idle
  // Empty polls since rows were last found; a quiet start has none to spend.
  int empty_polls_ = kBusyEmptyPolls;
};

}  // namespace msgx
