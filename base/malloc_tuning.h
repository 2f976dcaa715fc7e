// Tunes glibc's allocator for msgx's large, short-lived batch buffers
// (docs/performance.md#the-allocator).
//
// A fold batch writes megabytes at once: the pending batch's encoding, the
// RocksDB write batch and the memtable's copy of it. By default glibc serves
// each such buffer with a fresh mmap and hands the pages back when it is
// freed, or trims the heap top once 128 KiB are free there, so the next
// batch faults every page in again (one fault per 4 KiB, zeroed by the
// kernel). Measured: those faults were a quarter of the fold's time.
//
// TuneAllocatorForBatches() keeps buffers up to kMmapThreshold on the heap
// and keeps up to kTrimThreshold of free memory at a heap's top instead of
// returning it. The cost is bounded: a process holds at most
// kTrimThreshold more than it uses, per malloc arena, and never more than
// its peak.
//
// Thread-safety: call once, at start-up, before other threads allocate.
#pragma once

#include <cstddef>

namespace msgx {

inline constexpr std::size_t kMmapThreshold = std::size_t{32} << 20;   // glibc's maximum
inline constexpr std::size_t kTrimThreshold = std::size_t{256} << 20;  // per arena

// Returns false when the allocator refused a setting (not glibc's).
bool TuneAllocatorForBatches();

}  // namespace msgx
