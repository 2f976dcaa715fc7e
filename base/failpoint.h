// Failpoints: test-only crash and fault points
// (docs/commit-protocol.md#crash-points). Compiled in only when MSGX_FAILPOINTS
// is defined; release builds configure -DMSGX_FAILPOINTS=OFF and every
// MSGX_FAILPOINT is then nothing.
//
// A test arms failpoints through the environment of the process under test:
//   MSGX_TEST_FAILPOINTS="fold.record:17:abort,applier.committed::kill"
// Each entry is name:arg:action. An empty arg matches any argument; "#N"
// matches the N-th hit of the name, whatever its argument. Actions:
//   abort  raise SIGABRT (a "recorded death": the crash guard sees it)
//   kill   raise SIGKILL (like kill -9: nothing is recorded)
//   exit   _exit(86) without running destructors or flushing
//   error  MSGX_FAILPOINT_ERROR(name, arg) is true: the code at that point
//          fails as a bug would (kInternal), without crashing
//
// Thread-safety: the table is parsed once, on first use, and is then
// read-only; Hit() is safe from any thread.
#pragma once

#include <string_view>

namespace msgx {

// Fires the armed action for (name, arg), if any. Returns normally when
// nothing is armed for it.
void FailpointHit(std::string_view name, std::string_view arg);
// True when an "error" action is armed for (name, arg).
bool FailpointError(std::string_view name, std::string_view arg);
// Parses MSGX_TEST_FAILPOINTS again. For a test's forked child only (the
// parent may have parsed the table before the test set the variable); not
// thread-safe.
void FailpointsReloadForTesting();

}  // namespace msgx

#ifdef MSGX_FAILPOINTS
#define MSGX_FAILPOINT(name, arg) ::msgx::FailpointHit((name), (arg))
#define MSGX_FAILPOINT_ERROR(name, arg) ::msgx::FailpointError((name), (arg))
#else
#define MSGX_FAILPOINT_ERROR(name, arg) false
#define MSGX_FAILPOINT(name, arg) \
  do {                            \
  } while (false)
#endif
