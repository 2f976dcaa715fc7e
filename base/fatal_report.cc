#include "base/fatal_report.h"

#include <execinfo.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "base/signal_safe_line.h"
#include "base/thread_name.h"

namespace msgx {
namespace {

constexpr int kMaxFrames = 64;

const char* SignalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "signal";
  }
}

// A fault the kernel raised carries the faulting address; a signal sent by
// raise(), abort() or kill() has si_code <= 0 (SI_USER, SI_TKILL, ...).
bool HasFaultAddress(int sig, const siginfo_t* info) {
  if (info == nullptr || info->si_code <= 0) return false;
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
}

// The calling thread's alternate signal stack, from its first
// PrepareThreadForFatalReport to the thread's end. A stack the thread has
// already (a sanitizer runtime gives each thread one) is kept, not replaced.
class AltStack {
 public:
  AltStack() {
    if (ThreadHasSignalStack()) return;
    bytes_ = std::make_unique<char[]>(kSize);
    stack_t ss{};
    ss.ss_sp = bytes_.get();
    ss.ss_size = kSize;
    if (::sigaltstack(&ss, nullptr) != 0) bytes_.reset();
  }
  AltStack(const AltStack&) = delete;
  AltStack& operator=(const AltStack&) = delete;
  ~AltStack() {
    if (!bytes_) return;  // not ours
    // Off before the bytes go: a signal after this runs on the thread's stack.
    stack_t off{};
    off.ss_flags = SS_DISABLE;
    ::sigaltstack(&off, nullptr);
  }

 private:
  // The report's backtrace unwinds through libgcc on this stack: ample
  // beside glibc's SIGSTKSZ minimum.
  static constexpr std::size_t kSize = std::size_t{64} * 1024;
  std::unique_ptr<char[]> bytes_;
};

}  // namespace

void PrepareFatalReport() {
  void* frames[1];
  (void)::backtrace(frames, 1);
}

void PrepareThreadForFatalReport() { thread_local const AltStack stack; }

bool ThreadHasSignalStack() {
  stack_t now{};
  return ::sigaltstack(nullptr, &now) == 0 && (now.ss_flags & SS_DISABLE) == 0;
}

void BeginMsgxThread(std::string_view name) {
  SetCurrentThreadName(name);
  PrepareThreadForFatalReport();
}

void WriteFatalReport(int fd, int sig, const siginfo_t* info) {
  SignalSafeLine head;
  head.Add("msgx: fatal signal ");
  head.AddDecimal(static_cast<std::uint64_t>(sig));
  head.Add(" (");
  head.Add(SignalName(sig));
  head.Add(")");
  if (HasFaultAddress(sig, info)) {
    head.Add(" at address ");
    head.AddHex(reinterpret_cast<std::uintptr_t>(info->si_addr));
  }
  char name[kMaxThreadName + 1];
  CurrentThreadName(name);
  head.Add(" on thread \"");
  head.Add(name);
  head.Add("\" (tid ");
  head.AddDecimal(static_cast<std::uint64_t>(::syscall(SYS_gettid)));
  head.Add(")\nmsgx: backtrace, innermost first (addr2line -C -f -e <binary> <offset>):\n");
  head.WriteTo(fd);

  void* frames[kMaxFrames];
  const int depth = ::backtrace(frames, kMaxFrames);
  ::backtrace_symbols_fd(frames, depth, fd);

  SignalSafeLine tail;
  tail.Add("msgx: end of the backtrace\n");
  tail.WriteTo(fd);
}

}  // namespace msgx
