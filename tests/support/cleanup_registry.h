// CleanupRegistry: the last line of defence that keeps test servers from
// outliving the test binary.
//
// Three layers, strongest last:
//   1. a server's destructor stops it (the normal path);
//   2. an atexit hook stops every server still registered (a test that
//      exit()s, or a static fixture never destroyed);
//   3. a handler for SIGINT, SIGTERM, SIGHUP, SIGABRT, SIGSEGV, SIGBUS,
//      SIGFPE and SIGILL sends each registered pid its emergency signal
//      (async-signal-safe kill() only), then re-raises the signal with the
//      previous disposition. It acts only in the process that registered
//      the servers (never in a forked child, e.g. a death test), and for
//      SIGINT/SIGTERM/SIGHUP only when no one else handles them (a test of
//      SIGTERM draining keeps its servers).
// Servers are also spawned with PR_SET_PDEATHSIG, which covers SIGKILL of
// the test binary (base/subprocess.h).
//
// Thread-safety: Add/Remove/SetPid are safe from any thread.
#pragma once

#include <sys/types.h>

#include <functional>

namespace msgx::testing {

class CleanupRegistry {
 public:
  // Registers `stop` to run at exit (if not removed before) and `pid` to be
  // sent `emergency_signal` from a fatal-signal handler. Returns a handle.
  static int Add(std::function<void()> stop, pid_t pid, int emergency_signal);
  // Updates the pid of a handle (a restarted server).
  static void SetPid(int handle, pid_t pid);
  // Forgets a handle; its stop function is not run.
  static void Remove(int handle);
};

}  // namespace msgx::testing
