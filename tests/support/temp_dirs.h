// Temporary directories of test servers, and the sweep of ones left behind.
//
// Each directory is /tmp/msgx-test-<kind>-XXXXXX and holds an `owner.pid`
// file with the pid of the test binary that made it. A binary killed by a
// signal cannot remove its directories (its servers die with it, see
// cleanup_registry.h), so MakeOwnedTempDir first removes every such
// directory whose owner is gone.
//
// Thread-safety: safe from any thread.
#pragma once

#include <optional>
#include <string>

#include "base/result.h"
#include "base/subprocess.h"

namespace msgx::testing {

// Creates the directory, chowned to `owner` when given (PostgreSQL's data
// directory must belong to the user that runs it). Always under /tmp, so
// that the `postgres` user can reach it whatever TMPDIR says.
Result<std::string> MakeOwnedTempDir(const std::string& kind, const std::optional<UserIds>& owner);

// Removes msgx-test-* directories in /tmp whose owner process is gone.
void SweepStaleTempDirs();

}  // namespace msgx::testing
