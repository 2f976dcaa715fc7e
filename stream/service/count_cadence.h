// When a stage's periodic count is due again (docs/operations.md#metrics-and-alerts:
// msgx_outbox_pending).
//
// A dispatcher counts its target's PENDING and DEAD outbox rows for the
// msgx_outbox_pending and msgx_outbox_dead gauges. The count reads one
// index entry per pending row: nothing on a caught-up outbox, but about
// 70 ms of a PostgreSQL backend's time (and two parallel workers') at a
// backlog of a million events, as after a long Kafka outage, which is when
// the dispatcher needs PostgreSQL most
// (docs/performance.md#the-outbox-count-under-a-backlog). So a count is
// due `period` after the last one started, or, when that one took long,
// `ratio` times its duration after it ended, whichever is later: the
// counting takes at most about 1/ratio of the time, and the gauge is as
// fresh as that allows (every 3.5 s at 70 ms with a ratio of 50).
//
// Times are a monotonic clock's microseconds (Clock::MonotonicMicros).
// Thread-safety: none; one per stage.
#pragma once

#include <cstdint>

namespace msgx {

class CountCadence {
 public:
  CountCadence(std::int64_t period_micros, std::int64_t ratio)
      : period_(period_micros), ratio_(ratio) {}

  // True when no count was made yet, or the next one is due at `now`.
  bool Due(std::int64_t now) const { return next_ < 0 || now >= next_; }

  // A count that ran from `started` to `ended` (failed or not).
  void Counted(std::int64_t started, std::int64_t ended) {
    const std::int64_t by_period = started + period_;
    const std::int64_t by_cost = ended + ratio_ * (ended - started);
    next_ = by_period > by_cost ? by_period : by_cost;
  }

  // When the next count is due; -1 before the first.
  std::int64_t next() const { return next_; }

 private:
  std::int64_t period_;
  std::int64_t ratio_;
  std::int64_t next_ = -1;
};

}  // namespace msgx
