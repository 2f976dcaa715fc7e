#include "tests/support/server_start.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

#include "base/subprocess.h"

namespace msgx::testing {

Status LaunchOnFreePort(int* port, const std::function<Status()>& launch, int attempts) {
  Status launched;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    Result<int> free_port = FreeLoopbackPort();
    if (!free_port.ok()) {
      launched = free_port.status();
      continue;
    }
    *port = *free_port;
    launched = launch();
    if (launched.ok()) break;
  }
  return launched;
}

void FailServerStart(std::string_view server, const std::string& what) {
  ADD_FAILURE() << server << ": " << what;
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(server.size()), server.data(), what.c_str());
  std::abort();
}

}  // namespace msgx::testing
