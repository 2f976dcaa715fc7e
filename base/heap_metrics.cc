#include "base/heap_metrics.h"

#include <malloc.h>
#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include <vector>

namespace msgx {
namespace {

prometheus::MetricFamily Gauge(const char* name, const char* help, std::size_t bytes) {
  prometheus::MetricFamily f;
  f.name = name;
  f.help = help;
  f.type = prometheus::MetricType::Gauge;
  prometheus::ClientMetric m;
  m.gauge.value = static_cast<double>(bytes);
  f.metric.push_back(std::move(m));
  return f;
}

class HeapCollectable final : public prometheus::Collectable {
 public:
  std::vector<prometheus::MetricFamily> Collect() const override {
    const HeapFigures h = ReadHeapFigures();
    return {
        Gauge("msgx_malloc_in_use_bytes", "Bytes malloc has handed out and not had back.",
              h.in_use),
        Gauge("msgx_malloc_free_bytes", "Free bytes malloc's arenas keep from the kernel.", h.free),
        Gauge("msgx_malloc_arena_bytes", "Bytes malloc's arenas took from the kernel.", h.arenas)};
  }
};

}  // namespace

HeapFigures ReadHeapFigures() {
  const struct mallinfo2 m = ::mallinfo2();
  return HeapFigures{m.uordblks + m.hblkhd, m.fordblks, m.arena};
}

std::shared_ptr<prometheus::Collectable> MakeHeapCollectable() {
  return std::make_shared<HeapCollectable>();
}

}  // namespace msgx
