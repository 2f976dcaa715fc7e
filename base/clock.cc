#include "base/clock.h"

namespace msgx {

MicrosSinceEpoch SystemClock::NowMicros() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(system_clock::now().time_since_epoch()).count();
}

std::int64_t SystemClock::MonotonicMicros() const {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

SystemClock* SystemClock::Default() {
  static SystemClock clock;
  return &clock;
}

}  // namespace msgx
