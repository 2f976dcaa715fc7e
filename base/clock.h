// Clock: the only source of "now" outside the fold.
//
// The fold never reads a clock: its "now" is the append timestamp of the log
// record it is folding (docs/fold.md#determinism). Everything else
// (capture, backoff, jobs, dispatch) takes a Clock so that tests drive time
// by hand and never sleep.
//
// Thread-safety: SystemClock is safe from any thread. ManualClock is safe
// from any thread; Advance() wakes nobody, callers poll.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace msgx {

// Microseconds since the Unix epoch, UTC. The unit of every timestamp msgx
// stores (log append time, proc_state times).
using MicrosSinceEpoch = std::int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock time, microseconds since the Unix epoch.
  virtual MicrosSinceEpoch NowMicros() const = 0;
  // A monotonic reading for measuring intervals, microseconds.
  virtual std::int64_t MonotonicMicros() const = 0;
};

class SystemClock final : public Clock {
 public:
  MicrosSinceEpoch NowMicros() const override;
  std::int64_t MonotonicMicros() const override;
  // A process-wide instance.
  static SystemClock* Default();
};

// A clock that moves only when told to; for tests.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(MicrosSinceEpoch start) : now_(start), mono_(0) {}
  MicrosSinceEpoch NowMicros() const override { return now_.load(); }
  std::int64_t MonotonicMicros() const override { return mono_.load(); }
  void Advance(std::chrono::microseconds d) {
    now_ += d.count();
    mono_ += d.count();
  }
  void Set(MicrosSinceEpoch t) { now_ = t; }

 private:
  std::atomic<MicrosSinceEpoch> now_;
  std::atomic<std::int64_t> mono_;
};

}  // namespace msgx
