// FatalReport: what a process about to die of a fatal signal says on its
// way out (docs/operations.md#a-crash-report).
//
// WriteFatalReport writes, to one file descriptor:
//
//   msgx: fatal signal 11 (SIGSEGV) at address 0x10 on thread "fold" (tid 4242)
//   msgx: backtrace, innermost first (addr2line -C -f -e <binary> <offset>):
//   /usr/bin/msgx(+0x1b2c3d) [0x55d0c41b2c3d]
//   ...
//   msgx: end of the backtrace
//
// The address appears only for a fault the kernel raised (not for raise()
// or abort(), which carry no address). Frames in the msgx binary show as an
// offset into it: with the same binary, `addr2line` turns each into a
// function and a line.
//
// Async-signal-safe once PrepareFatalReport has run: the first backtrace()
// of a process loads libgcc's unwinder, which allocates; PrepareFatalReport
// does that load ahead, outside any handler. A fault on a smashed stack may
// fault again inside the report; the caller's handler decides what then
// happens (CrashGuard installs its handler with SA_RESETHAND, so a second
// fault kills the process at once).
#pragma once

#include <csignal>
#include <string_view>

namespace msgx {

// Loads the unwinder. Call once, before installing a handler that reports.
void PrepareFatalReport();

// Gives the calling thread a stack of its own for signal handlers
// (sigaltstack), which a handler installed with SA_ONSTACK runs on. Without
// it, a stack overflow kills the thread's process with no handler run: no
// report, and on the fold's thread no crash poison, so a message that
// overflows the stack would kill msgx again at every start. Idempotent per
// thread; the stack is released when the thread ends. A stack the thread
// already has (a sanitizer's) is kept. librdkafka's threads call it
// through an interceptor (stream/dispatch/kafka_threads.h), RocksDB's pool
// threads through the stores' Env (state/rocksdb_threads.h); a thread that
// never calls it runs handlers on its own stack.
void PrepareThreadForFatalReport();

// Whether the calling thread has a signal stack in place (its own, from
// PrepareThreadForFatalReport, or a sanitizer's).
bool ThreadHasSignalStack();

// The first call of every thread msgx starts: names it (SetCurrentThreadName,
// so that top -H, perf and a crash report say which it is) and prepares it
// (PrepareThreadForFatalReport, so that a stack overflow on it is reported).
void BeginMsgxThread(std::string_view name);

// Writes the report for `sig` (with `info` from an SA_SIGINFO handler, or
// null) to `fd`. Returns nothing: there is nobody left to tell of a failure.
void WriteFatalReport(int fd, int sig, const siginfo_t* info);

}  // namespace msgx
