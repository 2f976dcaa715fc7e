#include "stream/service/poll_loop.h"

#include <algorithm>

#include "base/log.h"

namespace msgx {

std::chrono::milliseconds PollBackoff(const PollLoopOptions& options, int failures) {
  std::chrono::milliseconds d = options.poll_interval;
  for (int i = 1; i < failures && d < options.max_backoff; ++i) d *= 2;
  return std::min(d, options.max_backoff);
}

Status RunPollLoop(const std::function<Result<bool>()>& step, const PollLoopOptions& options,
                   Stopper* stopper, PollLoopHealth* health) {
  int failures = 0;
  while (!stopper->stopped()) {
    Result<bool> r = step();
    if (!r.ok()) {
      if (r.status().error_class() != ErrorClass::kInfra) {
        Logger(options.component)->error("stopping: {}", r.status().ToString());
        return r.status();
      }
      if (failures++ == 0) {
        Logger(options.component)->warn("stalled: {}", r.status().ToString());
        if (health) {
          health->stalled = true;
          ++health->stalls;
        }
      }
      if (!stopper->WaitFor(PollBackoff(options, failures))) break;
      continue;
    }
    if (failures > 0) {
      Logger(options.component)->info("recovered after {} failed polls", failures);
      failures = 0;
      if (health) health->stalled = false;
    }
    if (*r) continue;
    if (!stopper->WaitFor(options.poll_interval)) break;
  }
  return Status::Ok();
}

}  // namespace msgx
