// Metrics: counters and gauges rendered in the Prometheus text format
// (version 0.0.4) for GET /metrics. Debian 12 packages no C++ Prometheus
// client, so this is the small part of one that msgx needs.
//
// A metric is a name, help text and an ordered set of label values:
//   Metrics::Global().Counter("msgx_outcomes_total", "Message outcomes",
//                             {{"state", "DEAD"}, {"class", "MALFORMED"}})->Add(1);
// The returned pointer stays valid for the process's life; updating it is a
// relaxed atomic operation, cheap on hot paths.
//
// Thread-safety: all methods are safe from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace msgx {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Counter {
 public:
  void Add(std::int64_t n = 1) { v_.fetch_add(n, std::memory_order_relaxed); }
  std::int64_t value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::int64_t> v_{0};
};

class Gauge {
 public:
  void Set(double v) { v_.store(v, std::memory_order_relaxed); }
  double value() const { return v_.load(std::memory_order_relaxed); }

 private:
  std::atomic<double> v_{0};
};

class Metrics {
 public:
  static Metrics& Global();

  Counter* GetCounter(const std::string& name, const std::string& help, const Labels& labels = {});
  Gauge* GetGauge(const std::string& name, const std::string& help, const Labels& labels = {});

  // The exposition text, families sorted by name, series by labels.
  std::string Render() const;

 private:
  struct Family {
    std::string help;
    bool is_counter = true;
    std::map<std::string, std::unique_ptr<Counter>> counters;  // by rendered labels
    std::map<std::string, std::unique_ptr<Gauge>> gauges;
  };
  mutable std::mutex mu_;
  std::map<std::string, Family> families_;  // guarded by mu_
};

}  // namespace msgx
