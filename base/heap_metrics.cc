#include "base/heap_metrics.h"

#include <malloc.h>

namespace msgx {

HeapFigures ReadHeapFigures() {
  const struct mallinfo2 m = ::mallinfo2();
  return HeapFigures{m.uordblks + m.hblkhd, m.fordblks, m.arena};
}

}  // namespace msgx
