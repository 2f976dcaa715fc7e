#include "state/rocksdb_threads.h"

#include <atomic>

#include "base/fatal_report.h"

namespace msgx {
namespace {

std::atomic<std::int64_t> g_scheduled{0};
std::atomic<std::int64_t> g_with_stack{0};

// A job handed to Schedule, as RocksDB gave it.
struct Job {
  void (*function)(void*);
  void* arg;
  void (*unschedule)(void*);
};

// Runs on a pool thread: prepares it, then runs the job.
void RunJob(void* raw) {
  Job* job = static_cast<Job*>(raw);
  PrepareThreadForFatalReport();
  if (ThreadHasSignalStack()) g_with_stack.fetch_add(1, std::memory_order_relaxed);
  void (*function)(void*) = job->function;
  void* arg = job->arg;
  delete job;
  function(arg);
}

// Runs instead of the job when RocksDB takes it back (Env::UnSchedule).
void DropJob(void* raw) {
  Job* job = static_cast<Job*>(raw);
  void (*unschedule)(void*) = job->unschedule;
  void* arg = job->arg;
  delete job;
  if (unschedule != nullptr) unschedule(arg);
}

class SignalStackEnv final : public rocksdb::EnvWrapper {
 public:
  SignalStackEnv() : rocksdb::EnvWrapper(rocksdb::Env::Default()) {}

  const char* Name() const override { return "MsgxSignalStackEnv"; }

  // `tag` is passed on unchanged: UnSchedule(tag) finds the job by it and
  // calls DropJob, which frees the wrapper and calls RocksDB's own.
  void Schedule(void (*function)(void* arg), void* arg, Priority pri, void* tag,
                void (*unschedule)(void* arg)) override {
    g_scheduled.fetch_add(1, std::memory_order_relaxed);
    target()->Schedule(&RunJob, new Job{function, arg, unschedule}, pri, tag, &DropJob);
  }
};

}  // namespace

rocksdb::Env* EnvWithSignalStacks() {
  // Never destroyed: a store closed during exit may still schedule on it.
  static SignalStackEnv* const env = new SignalStackEnv();
  return env;
}

std::int64_t RocksDbJobsScheduled() { return g_scheduled.load(std::memory_order_relaxed); }

std::int64_t RocksDbJobsWithSignalStack() { return g_with_stack.load(std::memory_order_relaxed); }

}  // namespace msgx
