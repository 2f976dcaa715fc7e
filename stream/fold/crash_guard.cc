#include "stream/fold/crash_guard.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/fatal_report.h"
#include "base/signal_safe_line.h"

namespace msgx {
namespace {

// The armed pair: offset (-1: none) and sub. See SetCurrent for why the
// handler always reads a consistent pair.
std::atomic<std::int64_t> g_current{-1};
std::atomic<int> g_current_sub{-1};
// The thread that armed g_current (the fold's): only a death on it is the
// record's fault. It is the thread's pthread_t, not its kernel id: glibc's
// pthread_self() reads the thread pointer register, where gettid() is a
// system call per record (4% of a re-fold). A pthread_t is unique among the
// live threads, and a forked child's thread keeps its parent thread's value,
// so a guard armed after fork() still recognises its thread.
std::atomic<pthread_t> g_fold_thread{};
static_assert(std::atomic<pthread_t>::is_always_lock_free);
static_assert(std::atomic<std::int64_t>::is_always_lock_free);
static_assert(std::atomic<int>::is_always_lock_free);
std::array<char, 4096> g_path{};  // written before handlers are installed

constexpr std::array<int, 5> kSignals{SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};

void OnFatalSignal(int sig, siginfo_t* info, void* /*context*/) {
  // A fatal signal is handled on the thread that caused it (a fault, or
  // raise/abort, which signal the calling thread). pthread_self() only reads
  // the thread pointer (glibc), so it is safe here although POSIX does not
  // list it as async-signal-safe.
  // The offset first: when it is armed, the sub beside it is its own.
  const std::int64_t offset = g_current.load(std::memory_order_seq_cst);
  const int sub = g_current_sub.load(std::memory_order_seq_cst);
  const bool on_fold_thread =
      ::pthread_equal(g_fold_thread.load(std::memory_order_relaxed), ::pthread_self()) != 0;
  if (offset >= 0 && on_fold_thread && g_path[0] != '\0') {
    int fd = ::open(g_path.data(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      SignalSafeLine line;
      line.AddDecimal(static_cast<std::uint64_t>(offset));
      if (sub >= 0) {
        line.Add("/");
        line.AddDecimal(static_cast<std::uint64_t>(sub));
      }
      line.Add(" ");
      line.AddDecimal(static_cast<std::uint64_t>(sig));
      line.Add("\n");
      line.WriteTo(fd);
      ::fsync(fd);
      ::close(fd);
    }
  }
  // Then say where: the death is on record before anything that could
  // fault again on a damaged stack or heap.
  WriteFatalReport(STDERR_FILENO, sig, info);
  // Die the way we would have: default action, re-raised.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

}  // namespace

Status CrashGuard::Install(const std::string& deaths_path) {
  if (deaths_path.size() >= g_path.size()) {
    return Status::Config("state.dir: deaths file path too long: " + deaths_path);
  }
  std::memcpy(g_path.data(), deaths_path.c_str(), deaths_path.size() + 1);
  PrepareFatalReport();
  PrepareThreadForFatalReport();  // the calling thread's; each other thread its own
  for (int sig : kSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = OnFatalSignal;
    sigemptyset(&sa.sa_mask);
    // On the thread's own signal stack where it has one
    // (PrepareThreadForFatalReport): a stack overflow is reported too.
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
    if (::sigaction(sig, &sa, nullptr) != 0) {
      return Status::Internal(std::string("sigaction: ") + std::strerror(errno));
    }
  }
  return Status::Ok();
}

// A death is recorded only on the thread that armed the guard, so the
// handler that reads the pair interrupts this very function (or runs after
// it), never races it from another core. The offset is disarmed first and
// armed last, and seq_cst keeps the compiler from reordering the three
// stores, so wherever the signal lands the handler sees the old pair, offset
// -1 (records nothing: a death in the few instructions of arming counts for
// no one), or the new pair; never the new sub with the old offset.
void CrashGuard::SetCurrent(std::int64_t offset, int sub) {
  g_current.store(-1, std::memory_order_seq_cst);
  g_fold_thread.store(::pthread_self(), std::memory_order_seq_cst);
  g_current_sub.store(sub < 0 ? -1 : sub, std::memory_order_seq_cst);
  g_current.store(offset, std::memory_order_seq_cst);
}

void CrashGuard::ClearCurrent() { g_current.store(-1, std::memory_order_seq_cst); }

Result<std::map<DeathKey, RecordedDeaths>> CrashGuard::ReadDeaths(const std::string& deaths_path) {
  std::map<DeathKey, RecordedDeaths> deaths;
  std::ifstream in(deaths_path);
  if (!in) return deaths;  // no file, no deaths
  std::string line;
  while (std::getline(in, line)) {
    // "<offset> <signal>" or "<offset>/<sub> <signal>".
    std::istringstream fields(line);
    DeathKey key;
    int sig = 0;
    if (!(fields >> key.offset) || key.offset < 0) continue;  // torn line
    if (fields.peek() == '/') {
      fields.get();
      if (!(fields >> key.sub) || key.sub < 0) continue;
    }
    if (!(fields >> sig)) continue;
    RecordedDeaths& d = deaths[key];
    ++d.count;
    d.last_signal = sig;
  }
  return deaths;
}

Status CrashGuard::Prune(const std::string& deaths_path, std::int64_t applied) {
  auto deaths = ReadDeaths(deaths_path);
  if (!deaths.ok()) return deaths.status();
  const std::string tmp = deaths_path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    for (const auto& [key, d] : *deaths) {
      if (key.offset <= applied) continue;
      for (int i = 0; i < d.count; ++i) {
        out << key.offset;
        if (key.sub >= 0) out << '/' << key.sub;
        out << ' ' << d.last_signal << '\n';
      }
    }
    out.flush();
    if (!out) return Status::Infra("cannot write " + tmp);
  }
  if (std::rename(tmp.c_str(), deaths_path.c_str()) != 0) {
    return Status::Infra("cannot rename " + tmp + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace msgx
