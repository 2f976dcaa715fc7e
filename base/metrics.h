// Metrics: msgx's seam over prometheus-cpp's core (Debian
// prometheus-cpp-dev 1.0.1: its Registry, Counter/Gauge/Histogram families
// and TextSerializer), rendered in the Prometheus text format (0.0.4) for
// GET /metrics (docs/operations.md#metrics-and-alerts). Callers see only
// this header; prometheus-cpp stays inside base/.
//
// A series is a family name, help text and a set of label values:
//   Metrics::Global().GetCounter("msgx_messages_total", "Message outcomes",
//                                {{"state", "DEAD"}, {"error_class", "MALFORMED"}})->Add(1);
// The returned pointer stays valid for the Metrics' life (Global(): the
// process's); asking again for the same series returns the same pointer.
// Updating a counter or gauge is an atomic operation, a histogram's
// observation a short lock: cheap enough per batch and per step.
//
// Names follow Prometheus naming: base units (seconds, bytes), counters end
// in _total. A name or label name that prometheus-cpp refuses, or a name
// asked for as two types, throws std::invalid_argument: a bug, not input.
//
// Global() also carries the standard process_* families
// (base/process_metrics.h), read from /proc at each Render(), with the
// allocator's msgx_malloc_* families (base/heap_metrics.h).
//
// Thread-safety: all methods are safe from any thread. Scrape hooks run on
// the thread calling Render().
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace prometheus {
class Registry;
class Collectable;
class Counter;
class Gauge;
class Histogram;
}  // namespace prometheus

namespace msgx {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  explicit Counter(prometheus::Counter* c) : c_(c) {}
  // REQUIRES: n >= 0.
  void Add(std::int64_t n = 1);
  void AddSeconds(double seconds);  // for *_seconds_total counters
  double value() const;

 private:
  prometheus::Counter* c_;
};

class Gauge {
 public:
  explicit Gauge(prometheus::Gauge* g) : g_(g) {}
  void Set(double v);
  double value() const;

 private:
  prometheus::Gauge* g_;
};

class Histogram {
 public:
  explicit Histogram(prometheus::Histogram* h) : h_(h) {}
  void Observe(double v);

 private:
  prometheus::Histogram* h_;
};

// Bucket bounds for latencies in seconds: 1 ms .. 5 min.
std::vector<double> LatencyBuckets();
// Bucket bounds for batch sizes in records: 1 .. 10,000.
std::vector<double> SizeBuckets();

class Metrics {
 public:
  Metrics();
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  static Metrics& Global();

  Counter* GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge* GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});
  // `buckets`: the upper bounds, ascending (+Inf is implied). A series asked
  // for again keeps the bounds it was made with.
  Histogram* GetHistogram(const std::string& name, const std::string& help,
                          const std::vector<double>& buckets, const Labels& labels = {});

  // `fn` runs at the start of every Render() (to set gauges that are read
  // at scrape time, such as the stages' lag), until RemoveScrapeHook(id).
  // RemoveScrapeHook waits for a Render() that is running the hook.
  int AddScrapeHook(std::function<void()> fn);
  void RemoveScrapeHook(int id);

  // Families produced by `c` at each Render() (the process_* collector).
  void AddCollectable(std::shared_ptr<prometheus::Collectable> c);

  // The exposition text.
  std::string Render() const;

 private:
  template <typename T>
  T* Slot(std::map<std::string, std::unique_ptr<T>>* slots, const std::string& name,
          const Labels& labels, const std::function<T()>& make);

  std::shared_ptr<prometheus::Registry> registry_;
  mutable std::mutex mu_;
  std::map<std::string, std::unique_ptr<Counter>> counters_;            // guarded by mu_
  std::map<std::string, std::unique_ptr<Gauge>> gauges_;                // guarded by mu_
  std::map<std::string, std::unique_ptr<Histogram>> histograms_;        // guarded by mu_
  std::vector<std::shared_ptr<prometheus::Collectable>> collectables_;  // guarded by mu_
  mutable std::mutex hooks_mu_;                                         // held while hooks run
  std::map<int, std::function<void()>> hooks_;                          // guarded by hooks_mu_
  int next_hook_ = 0;                                                   // guarded by hooks_mu_
};

}  // namespace msgx
