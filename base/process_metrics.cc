#include "base/process_metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>
#include <sys/resource.h>
#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/heap_metrics.h"

namespace msgx {
namespace {

std::optional<std::string> ReadFile(const char* path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> Field(const std::vector<std::string_view>& fields, size_t n) {
  // /proc/<pid>/stat numbers its fields from 1; fields[0] is field 3.
  if (n < 3 || n - 3 >= fields.size()) return std::nullopt;
  const std::string_view f = fields[n - 3];
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || p != f.data() + f.size()) return std::nullopt;
  return static_cast<double>(v);
}

prometheus::MetricFamily One(const char* name, const char* help, prometheus::MetricType type,
                             double v) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = type;
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = v;
  } else {
    m.gauge.value = v;
  }
  f.metric.push_back(std::move(m));
  return f;
}

class ProcessCollectable final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    using prometheus::MetricType;
    std::vector<prometheus::MetricFamily> out;
    auto stat = ReadFile("/proc/self/stat");
    auto proc_stat = ReadFile("/proc/stat");
    std::optional<std::int64_t> boot = proc_stat ? ParseBootTime(*proc_stat) : std::nullopt;
    if (stat && boot) {
      if (auto s = ParseProcStat(*stat, *boot, ::sysconf(_SC_CLK_TCK), ::sysconf(_SC_PAGESIZE))) {
        out.push_back(One("process_cpu_seconds_total",
                          "Total user and system CPU time spent in seconds.", MetricType::Counter,
                          s->cpu_seconds));
        out.push_back(One("process_resident_memory_bytes", "Resident memory size in bytes.",
                          MetricType::Gauge, s->resident_bytes));
        out.push_back(One("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                          MetricType::Gauge, s->virtual_bytes));
        out.push_back(One("process_start_time_seconds",
                          "Start time of the process since unix epoch in seconds.",
                          MetricType::Gauge, s->start_time_seconds));
        out.push_back(One("process_threads", "Number of OS threads in the process.",
                          MetricType::Gauge, s->threads));
      }
    }
    std::error_code ec;
    double fds = 0;
    for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
         it.increment(ec)) {
      ++fds;
    }
    // The directory's own descriptor, open while it was read, is not counted.
    if (!ec && fds > 0) {
      out.push_back(
          One("process_open_fds", "Number of open file descriptors.", MetricType::Gauge, fds - 1));
    }
    const HeapFigures heap = ReadHeapFigures();
    out.push_back(One("msgx_malloc_in_use_bytes", "Bytes malloc has handed out and not had back.",
                      MetricType::Gauge, static_cast<double>(heap.in_use)));
    out.push_back(One("msgx_malloc_free_bytes", "Free bytes malloc's arenas keep from the kernel.",
                      MetricType::Gauge, static_cast<double>(heap.free)));
    out.push_back(One("msgx_malloc_arena_bytes", "Bytes malloc's arenas took from the kernel.",
                      MetricType::Gauge, static_cast<double>(heap.arenas)));
    rlimit lim{};
    if (::getrlimit(RLIMIT_NOFILE, &lim) == 0 && lim.rlim_cur != RLIM_INFINITY) {
      out.push_back(One("process_max_fds", "Maximum number of open file descriptors.",
                        MetricType::Gauge, static_cast<double>(lim.rlim_cur)));
    }
    return out;
  }
};

}  // namespace

std::optional<ProcessStat> ParseProcStat(std::string_view stat, std::int64_t boot_time_seconds,
                                         std::int64_t ticks_per_second, std::int64_t page_bytes) {
  const size_t close = stat.rfind(')');
  if (close == std::string_view::npos || ticks_per_second <= 0) return std::nullopt;
  std::vector<std::string_view> fields;
  std::string_view rest = stat.substr(close + 1);
  while (!rest.empty()) {
    const size_t start = rest.find_first_not_of(" \n");
    if (start == std::string_view::npos) break;
    rest.remove_prefix(start);
    const size_t end = rest.find_first_of(" \n");
    fields.push_back(rest.substr(0, end));
    if (end == std::string_view::npos) break;
    rest.remove_prefix(end);
  }
  auto utime = Field(fields, 14);
  auto stime = Field(fields, 15);
  auto threads = Field(fields, 20);
  auto start = Field(fields, 22);
  auto vsize = Field(fields, 23);
  auto rss = Field(fields, 24);
  if (!utime || !stime || !threads || !start || !vsize || !rss) return std::nullopt;
  const auto ticks = static_cast<double>(ticks_per_second);
  ProcessStat s;
  s.cpu_seconds = (*utime + *stime) / ticks;
  s.threads = *threads;
  s.start_time_seconds = static_cast<double>(boot_time_seconds) + *start / ticks;
  s.virtual_bytes = *vsize;
  s.resident_bytes = *rss * static_cast<double>(page_bytes);
  return s;
}

std::optional<std::int64_t> ParseBootTime(std::string_view proc_stat) {
  constexpr std::string_view kKey = "btime ";
  size_t at = 0;
  while (at < proc_stat.size()) {
    const size_t eol = proc_stat.find('\n', at);
    const std::string_view line =
        proc_stat.substr(at, eol == std::string_view::npos ? std::string_view::npos : eol - at);
    if (line.substr(0, kKey.size()) == kKey) {
      std::int64_t v = 0;
      const char* b = line.data() + kKey.size();
      const char* e = line.data() + line.size();
      auto [p, ec] = std::from_chars(b, e, v);
      if (ec == std::errc() && p == e) return v;
      return std::nullopt;
    }
    if (eol == std::string_view::npos) break;
    at = eol + 1;
  }
  return std::nullopt;
}

std::shared_ptr<prometheus::Collectable> MakeProcessCollectable() {
  return std::make_shared<ProcessCollectable>();
}

}  // namespace msgx
