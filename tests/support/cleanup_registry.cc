#include "tests/support/cleanup_registry.h"

#include <signal.h>
#include <unistd.h>

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
std::atomic<pid_t> g_owner{0};  // the process that registered the servers

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
  for (int i = 0; i < kNumFatalSignals; ++i) {
    if (kFatalSignals[i] != sig) continue;
    // Only the process that started the servers kills them: a forked child
    // (a death test, a crash test) inherits this handler but not the
    // servers. And a signal someone else handles (a test of SIGTERM
    // draining) is theirs: only a signal that kills us kills the servers.
    bool previous_kills =
        g_previous[i].sa_handler == SIG_DFL && (g_previous[i].sa_flags & SA_SIGINFO) == 0;
    bool crash = sig != SIGINT && sig != SIGTERM && sig != SIGHUP;
    if (getpid() == g_owner.load() && (previous_kills || crash)) KillRegistered();
    sigaction(sig, &g_previous[i], nullptr);
  }
  // Delivered when this handler returns, to the previous disposition.
  raise(sig);
}

void RunStopsAtExit() {
  if (getpid() != g_owner.load()) return;  // a forked child exiting
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
  g_owner.store(getpid());
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
