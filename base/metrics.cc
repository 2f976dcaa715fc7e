#include "base/metrics.h"

#include <cstdio>

namespace msgx {
namespace {

std::string EscapeLabel(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string RenderLabels(const Labels& labels) {
  if (labels.empty()) return "";
  std::string s = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) s += ',';
    s += labels[i].first + "=\"" + EscapeLabel(labels[i].second) + "\"";
  }
  return s + "}";
}

}  // namespace

Metrics& Metrics::Global() {
  static Metrics* m = new Metrics();  // never destroyed: used until exit
  return *m;
}

Counter* Metrics::GetCounter(const std::string& name, const std::string& help,
                             const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.help = help;
  f.is_counter = true;
  auto& slot = f.counters[RenderLabels(labels)];
  if (!slot) slot = std::make_unique<Counter>();
  return slot.get();
}

Gauge* Metrics::GetGauge(const std::string& name, const std::string& help, const Labels& labels) {
  std::lock_guard<std::mutex> lock(mu_);
  Family& f = families_[name];
  f.help = help;
  f.is_counter = false;
  auto& slot = f.gauges[RenderLabels(labels)];
  if (!slot) slot = std::make_unique<Gauge>();
  return slot.get();
}

std::string Metrics::Render() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out;
  for (const auto& [name, f] : families_) {
    out += "# HELP " + name + " " + f.help + "\n";
    out += "# TYPE " + name + (f.is_counter ? " counter\n" : " gauge\n");
    for (const auto& [labels, c] : f.counters) {
      out += name + labels + " " + std::to_string(c->value()) + "\n";
    }
    for (const auto& [labels, g] : f.gauges) {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g", g->value());
      out += name + labels + " " + buf + "\n";
    }
  }
  return out;
}

}  // namespace msgx
