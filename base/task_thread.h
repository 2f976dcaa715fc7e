// TaskThread: one thread that runs the tasks given to it, one at a time, in
// the order given.
//
// For work that overlaps its caller's and comes back often, such as a
// dispatcher's SENT update and its next head read while a batch is in
// Kafka. std::async would start a thread for every call. Each new thread
// took one of glibc's malloc arenas, often one whose heap had to grow again
// page by page. In a backlog drain that was four tenths of the
// dispatcher's CPU
// (docs/performance.md#a-thread-per-dispatcher-task-2026-12-06). One
// long-lived thread keeps its arena warm.
//
// Thread-safety: Run may be called from any thread. The destructor runs
// the tasks already given, then joins the thread; a future of a task given
// before it stays valid.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <type_traits>
#include <utility>

namespace msgx {

class TaskThread {
 public:
  // `name`: the thread's name; the thread begins as every msgx thread does
  // (BeginMsgxThread, base/fatal_report.h).
  explicit TaskThread(std::string name);
  ~TaskThread();
  TaskThread(const TaskThread&) = delete;
  TaskThread& operator=(const TaskThread&) = delete;

  // Queues fn and returns the future of its result (or of its exception).
  template <typename Fn>
  auto Run(Fn fn) -> std::future<std::invoke_result_t<Fn&>> {
    using R = std::invoke_result_t<Fn&>;
    auto task = std::make_shared<std::packaged_task<R()>>(std::move(fn));
    std::future<R> result = task->get_future();
    Post([task] { (*task)(); });
    return result;
  }

 private:
  void Post(std::function<void()> job);
  void Loop();

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> jobs_;  // guarded by mu_
  bool stopping_ = false;                   // guarded by mu_
  std::thread thread_;                      // last: starts after the rest
};

}  // namespace msgx
