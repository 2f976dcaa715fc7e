// What glibc's allocator holds (Linux, glibc 2.33 or later: mallinfo2),
// published with the process_* metrics at each scrape
// (base/process_metrics.h):
//   msgx_malloc_in_use_bytes  memory malloc has handed out and not yet had
//                             back: in its arenas and in blocks it mapped on
//                             their own (mallinfo2 uordblks + hblkhd);
//   msgx_malloc_free_bytes    free memory the arenas keep instead of giving
//                             it back to the kernel (fordblks), most of it
//                             resident until trimmed;
//   msgx_malloc_arena_bytes   what the arenas took from the kernel, in use
//                             and free (arena).
// So of process_resident_memory_bytes, what the program uses and what the
// allocator only keeps are told apart: a resident size that grows with
// msgx_malloc_free_bytes is the allocator's, one that grows with
// msgx_malloc_in_use_bytes is the program's (docs/operations.md#memory).
//
// mallinfo2 takes each arena's lock in turn and walks its free lists, so a
// scrape holds up an allocation in the thread it meets for as long as one
// arena's walk.
//
// Thread-safety: any thread.
#pragma once

#include <cstddef>

namespace msgx {

struct HeapFigures {
  std::size_t in_use = 0;
  std::size_t free = 0;
  std::size_t arenas = 0;
};

// The allocator's figures now (mallinfo2).
HeapFigures ReadHeapFigures();

}  // namespace msgx
