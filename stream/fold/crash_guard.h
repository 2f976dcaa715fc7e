// CrashGuard: records which log record the process died on
// (docs/crash-safety.md#crash-poison).
//
// A fatal-signal handler (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT) appends
// one line "<offset> <signal>\n" to the deaths file with open/write/close
// only (async-signal-safe), then re-raises the signal with its default
// action, so the process still dies the way it would have. Between the two
// it writes a crash report with a backtrace to stderr, for every fatal
// signal on every thread (base/fatal_report.h). The handler runs on the
// thread's own signal stack where it has one (PrepareThreadForFatalReport),
// so a stack overflow on the fold's thread is recorded too. Nothing is
// recorded when no record is being folded, or for SIGKILL/OOM/power loss,
// which therefore never quarantine anything.
//
// While the fold decides the k-th message of a REPLAY command it arms
// (offset, k) instead, and the line is "<offset>/<k> <signal>\n": the death
// is that message's fault, not the whole command's, so crash poison can
// quarantine that message alone. A line without "/<k>" (every line written
// before subs existed) reads as sub -1, the whole record.
//
// Only a death on the fold's own thread counts: SetCurrent records the
// calling thread (pthread_self) with the offset, and the handler, which runs on the
// thread that faulted or called abort/raise, records the death only when
// that is the thread which armed the guard. An abort in the mirror, the
// applier, the HTTP server or a librdkafka thread while the fold decides a
// slow record is not that record's fault and is not counted.
//
// On restart the owner reads the file (ReadDeaths), quarantines every
// {offset, sub} that died twice or more (a log command, written by the
// fold's owner), and then calls Prune with the applied offset so that the
// file stays small.
//
// Thread-safety: SetCurrent/ClearCurrent are lock-free and meant for the
// single fold thread. Install is called once, before the fold starts. The
// handler never sees a torn pair: since only a death on the arming thread
// is recorded, the handler interrupts that thread's own SetCurrent, which
// disarms (offset -1) before it writes the sub and arms the offset last, all
// with seq_cst atomics, so the handler reads the old pair, -1 (nothing
// recorded) or the new pair.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <string>

#include "base/result.h"

namespace msgx {

// What a death is recorded against: a log record (sub -1), or the sub-th
// message of the REPLAY command at `offset`.
struct DeathKey {
  std::int64_t offset = -1;
  int sub = -1;
  auto operator<=>(const DeathKey&) const = default;
};

struct RecordedDeaths {
  int count = 0;
  int last_signal = 0;
};

class CrashGuard {
 public:
  // Installs the handlers; deaths are appended to `deaths_path`.
  // REQUIRES: called at most once per process (later calls replace the path).
  static Status Install(const std::string& deaths_path);

  // The fold is now deciding the record at `offset` (sub -1), or the sub-th
  // message (sub >= 0) of the REPLAY command at `offset`, on the calling
  // thread (the only thread whose death counts until the next SetCurrent).
  static void SetCurrent(std::int64_t offset, int sub = -1);
  // The fold is between records (a death now is not the record's fault).
  static void ClearCurrent();

  // {offset, sub} → deaths recorded in the file, in that order. A missing
  // file is no deaths; malformed lines (a torn write) are ignored.
  static Result<std::map<DeathKey, RecordedDeaths>> ReadDeaths(const std::string& deaths_path);

  // Rewrites the file, in the same line format, without the offsets <=
  // applied, whatever their sub (those records have since been folded or
  // quarantined). Atomic (write + rename).
  static Status Prune(const std::string& deaths_path, std::int64_t applied);
};

}  // namespace msgx
