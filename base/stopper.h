// Stopper: the stop flag every long-running loop of `msgx run` watches, and
// the one place loops wait, so that SIGTERM ends every wait at once.
//
// Waiting uses the system's steady clock through a condition variable;
// code under test does not wait at all (it calls one step at a time), so the
// "no sleeping in unit tests" rule holds.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <vector>

namespace msgx {

class Stopper {
 public:
  // Asks every loop to stop after its current step, and wakes every waiter.
  void Stop();
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }

  // Wakes waiters without stopping (e.g. "new records in the log").
  void Notify();

  // `child` is stopped whenever this one is (now, if already stopped). A
  // loop that must wake on its own notifications, not every loop's, waits
  // on a child: Notify() wakes only the waiters of one Stopper, and the
  // first of them to wake consumes it. REQUIRES: child outlives this.
  void Link(Stopper* child);

  // Waits until `d` has passed, Notify() or Stop() is called. Returns false
  // once stopped. A Notify() that came since the last wait returns at once.
  bool WaitFor(std::chrono::milliseconds d);

  // Consumes a pending Notify() without waiting: true when there was one.
  // For waiters that do not block (the stage runner's tests).
  bool TakeNotification();

 private:
  std::atomic<bool> stopped_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool notified_ = false;           // guarded by mu_
  std::vector<Stopper*> children_;  // guarded by mu_
};

// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (so in every thread
// it starts afterwards) and starts a thread that waits for them: the first
// calls first->Stop(), every later one then->Stop() (`msgx run`: the first
// begins the drain, a second stops at once, docs/operations.md#stopping).
// Call once, from main, before starting other threads.
// REQUIRES: both outlive the process's use of them.
void StopOnTerminationSignals(Stopper* first, Stopper* then);

}  // namespace msgx
