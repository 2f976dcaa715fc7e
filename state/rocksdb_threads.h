// RocksDbThreads: msgx's part in the threads RocksDB runs its background
// work on (flushes and compactions, in the Env's thread pools).
//
// RocksDB names those threads itself (rocksdb:low, rocksdb:high, ...), which
// is what top -H, perf and a crash report show
// (docs/operations.md#a-crash-report). What it cannot do is give them a
// signal stack: without one, a stack overflow on such a thread kills msgx
// with no handler run and so with no report. RocksDB 7.8 has no hook for a
// thread's start, so EnvWithSignalStacks wraps the default Env and wraps
// every job it schedules: the job first calls PrepareThreadForFatalReport
// (base/fatal_report.h; idempotent per thread), then runs. Every thread of
// the pools is thereby prepared before it runs anything of a store of
// msgx's. The pools stay the default Env's, shared by every store.
//
// Not covered: the few threads RocksDB starts without its Env (the
// periodic-task timer that dumps statistics); they run handlers on their
// own stack, as before.
//
// Thread-safety: all of it, from any thread.
#pragma once

#include <rocksdb/env.h>

#include <cstdint>

namespace msgx {

// The Env every store of msgx opens with unless a test injects its own:
// RocksDB's default, with each background job run as above. Never null;
// lives to the end of the process.
rocksdb::Env* EnvWithSignalStacks();

// How many background jobs have been handed to that Env, in this process:
// RocksDB schedules a job from the call that makes it due (a write that
// fills the write-ahead log's bound, a Flush), before that call returns.
// A job may still be taken back unrun: closing a store unschedules the
// jobs no thread has picked up yet.
std::int64_t RocksDbJobsScheduled();

// How many background jobs of that Env have run, in this process, on a
// thread with a signal stack in place (for tests and diagnostics).
std::int64_t RocksDbJobsWithSignalStack();

}  // namespace msgx
