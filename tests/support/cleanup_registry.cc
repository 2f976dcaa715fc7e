#include "tests/support/cleanup_registry.h"

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>

namespace msgx::testing {
namespace {

constexpr int kSlots = 64;
constexpr int kFatalSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
constexpr int kNumFatalSignals = sizeof(kFatalSignals) / sizeof(kFatalSignals[0]);

// Lock-free slots read by the signal handler.
std::atomic<pid_t> g_pids[kSlots];
std::atomic<int> g_signals[kSlots];
struct sigaction g_previous[kNumFatalSignals];

struct State {
  std::mutex mu;
  std::map<int, std::function<void()>> stops;
  bool hooks_installed = false;
};

// Leaked on purpose: it must outlive every static destructor and atexit hook.
State& GetState() {
  static State* state = new State();
  return *state;
}

void KillRegistered() {
  for (int i = 0; i < kSlots; ++i) {
    pid_t pid = g_pids[i].load();
    if (pid > 0) kill(pid, g_signals[i].load());
  }
}

void OnFatalSignal(int sig) {
  KillRegistered();
  for (int i = 0; i < kNumFatalSignals; ++i) {
    if (kFatalSignals[i] == sig) sigaction(sig, &g_previous[i], nullptr);
  }
  // Delivered when this handler returns, to the previous disposition.
  raise(sig);
}

void RunStopsAtExit() {
  std::map<int, std::function<void()>> stops;
  {
    std::lock_guard<std::mutex> lock(GetState().mu);
    stops.swap(GetState().stops);
  }
  for (auto& [handle, stop] : stops) {
    g_pids[handle].store(0);
    stop();
  }
}

void InstallHooksLocked(State& s) {
  if (s.hooks_installed) return;
  s.hooks_installed = true;
  std::atexit(RunStopsAtExit);
  for (int i = 0; i < kNumFatalSignals; ++i) {
    struct sigaction sa {};
    sa.sa_handler = OnFatalSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = 0;
    sigaction(kFatalSignals[i], &sa, &g_previous[i]);
  }
}

}  // namespace

int CleanupRegistry::Add(std::function<void()> stop, pid_t pid, int emergency_signal) {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  InstallHooksLocked(s);
  for (int i = 0; i < kSlots; ++i) {
    if (s.stops.count(i) == 0) {
      s.stops[i] = std::move(stop);
      g_signals[i].store(emergency_signal);
      g_pids[i].store(pid);
      return i;
    }
  }
  std::abort();  // more than 64 live servers in one test binary: a test bug
}

void CleanupRegistry::SetPid(int handle, pid_t pid) {
  if (handle >= 0 && handle < kSlots) g_pids[handle].store(pid);
}

void CleanupRegistry::Remove(int handle) {
  State& s = GetState();
  std::lock_guard<std::mutex> lock(s.mu);
  if (handle >= 0 && handle < kSlots) g_pids[handle].store(0);
  s.stops.erase(handle);
}

}  // namespace msgx::testing
