// The standard process_* metrics of a Prometheus client, read from /proc at
// each scrape (Linux only):
//   process_cpu_seconds_total      user + system CPU time   (/proc/self/stat)
//   process_resident_memory_bytes  resident set size        (/proc/self/stat)
//   process_virtual_memory_bytes   virtual memory size      (/proc/self/stat)
//   process_start_time_seconds     start, seconds since the epoch
//                                  (/proc/stat btime + the start in ticks)
//   process_open_fds               entries of /proc/self/fd
//   process_max_fds                RLIMIT_NOFILE's soft limit
//   process_threads                threads of the process   (/proc/self/stat)
// and glibc's allocator's msgx_malloc_in_use_bytes, msgx_malloc_free_bytes and
// msgx_malloc_arena_bytes (base/heap_metrics.h).
// A figure that cannot be read is left out of that scrape, not reported 0.
//
// Thread-safety: the collectable may be collected from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>

namespace prometheus {
class Collectable;
}

namespace msgx {

struct ProcessStat {
  double cpu_seconds = 0;
  double resident_bytes = 0;
  double virtual_bytes = 0;
  double start_time_seconds = 0;
  double threads = 0;
};

// Parses the text of /proc/<pid>/stat (the command name may hold spaces and
// parentheses), with /proc/stat's btime, the clock ticks per second and the
// page size. Empty when the text is not of that form.
std::optional<ProcessStat> ParseProcStat(std::string_view stat, std::int64_t boot_time_seconds,
                                         std::int64_t ticks_per_second, std::int64_t page_bytes);

// The btime line of /proc/stat's text; empty when there is none.
std::optional<std::int64_t> ParseBootTime(std::string_view proc_stat);

// The collector of the families above, for Metrics::AddCollectable.
std::shared_ptr<prometheus::Collectable> MakeProcessCollectable();

}  // namespace msgx
