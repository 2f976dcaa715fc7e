#include "base/metrics.h"

#include <prometheus/collectable.h>
#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/metric_family.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>

#include "base/process_metrics.h"

namespace msgx {
namespace {

prometheus::Labels ToPrometheus(const Labels& labels) {
  return prometheus::Labels(labels.begin(), labels.end());
}

// The key of one series: its name and its labels, sorted (as prometheus-cpp
// keeps them), so that the order the caller gives them in does not matter.
std::string SeriesKey(const std::string& name, const Labels& labels) {
  std::string key = name;
  for (const auto& [k, v] : ToPrometheus(labels)) {
    key += '\0';
    key += k;
    key += '\0';
    key += v;
  }
  return key;
}

}  // namespace

void Counter::Add(std::int64_t n) { c_->Increment(static_cast<double>(n)); }
void Counter::AddSeconds(double seconds) { c_->Increment(seconds); }
double Counter::value() const { return c_->Value(); }
void Gauge::Set(double v) { g_->Set(v); }
double Gauge::value() const { return g_->Value(); }
void Histogram::Observe(double v) { h_->Observe(v); }

std::vector<double> LatencyBuckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300};
}

std::vector<double> SizeBuckets() {
  return {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 10000};
}

Metrics::Metrics() : registry_(std::make_shared<prometheus::Registry>()) {}
Metrics::~Metrics() = default;

Metrics& Metrics::Global() {
  static Metrics* m = [] {
    auto* g = new Metrics();  // never destroyed: used until exit
    g->AddCollectable(MakeProcessCollectable());
    return g;
  }();
  return *m;
}

template <typename T>
T* Metrics::Slot(std::map<std::string, std::unique_ptr<T>>* slots, const std::string& name,
                 const Labels& labels, const std::function<T()>& make) {
  std::lock_guard<std::mutex> lock(mu_);
  auto& slot = (*slots)[SeriesKey(name, labels)];
  if (!slot) slot = std::make_unique<T>(make());
  return slot.get();
}

Counter* Metrics::GetCounter(const std::string& name, const std::string& help,
                             const Labels& labels) {
  return Slot<Counter>(&counters_, name, labels, [&] {
    auto& family = prometheus::BuildCounter().Name(name).Help(help).Register(*registry_);
    return Counter(&family.Add(ToPrometheus(labels)));
  });
}

Gauge* Metrics::GetGauge(const std::string& name, const std::string& help, const Labels& labels) {
  return Slot<Gauge>(&gauges_, name, labels, [&] {
    auto& family = prometheus::BuildGauge().Name(name).Help(help).Register(*registry_);
    return Gauge(&family.Add(ToPrometheus(labels)));
  });
}

Histogram* Metrics::GetHistogram(const std::string& name, const std::string& help,
                                 const std::vector<double>& buckets, const Labels& labels) {
  return Slot<Histogram>(&histograms_, name, labels, [&] {
    auto& family = prometheus::BuildHistogram().Name(name).Help(help).Register(*registry_);
    return Histogram(&family.Add(ToPrometheus(labels), buckets));
  });
}

int Metrics::AddScrapeHook(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  const int id = next_hook_++;
  hooks_.emplace(id, std::move(fn));
  return id;
}

void Metrics::RemoveScrapeHook(int id) {
  std::lock_guard<std::mutex> lock(hooks_mu_);
  hooks_.erase(id);
}

void Metrics::AddCollectable(std::shared_ptr<prometheus::Collectable> c) {
  std::lock_guard<std::mutex> lock(mu_);
  collectables_.push_back(std::move(c));
}

std::string Metrics::Render() const {
  {
    std::lock_guard<std::mutex> lock(hooks_mu_);
    for (const auto& [id, fn] : hooks_) fn();
  }
  std::vector<prometheus::MetricFamily> families = registry_->Collect();
  std::vector<std::shared_ptr<prometheus::Collectable>> more;
  {
    std::lock_guard<std::mutex> lock(mu_);
    more = collectables_;
  }
  for (const auto& c : more) {
    for (auto& f : c->Collect()) families.push_back(std::move(f));
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, families);
  return out.str();
}

}  // namespace msgx
