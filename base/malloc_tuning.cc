#include "base/malloc_tuning.h"

#include <malloc.h>

namespace msgx {

bool TuneAllocatorForBatches() {
  // Setting either turns off glibc's dynamic adjustment of both.
  const bool mmap_ok = mallopt(M_MMAP_THRESHOLD, static_cast<int>(kMmapThreshold)) == 1;
  const bool trim_ok = mallopt(M_TRIM_THRESHOLD, static_cast<int>(kTrimThreshold)) == 1;
  return mmap_ok && trim_ok;
}

}  // namespace msgx
