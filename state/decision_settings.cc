#include "state/decision_settings.h"

#include "codecs/time_zone.h"
#include "state/digest.h"
#include "state/flight.h"

namespace msgx {
namespace {

std::string Ms(Millis d) { return std::to_string(d.count()) + "ms"; }

std::string List(const std::vector<std::string>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i];
  return s + "]";
}

std::string Durations(const std::vector<Millis>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + Ms(v[i]);
  return s + "]";
}

std::string Bool(bool b) { return b ? "true" : "false"; }

constexpr std::string_view kEventFlightStateKey = "events.flight-state";

}  // namespace

DecisionSettings DecisionSettings::Values(const Config& c) {
  DecisionSettings s;
  s.ignore_rules = c.ignore_rules;
  s.retry_deterministic = c.pipeline.retry_deterministic;
  s.max_attempts = c.pipeline.max_attempts;
  s.backoff = c.pipeline.backoff;
  s.backoff_cap = c.pipeline.backoff_cap;
  s.head_deadline = c.pipeline.head_deadline;
  s.include_day_boundary = c.identity_include_day_boundary;
  s.identity_window = c.identity_window;
  s.snapshot_clear_missing = c.schd_snapshot_clear_missing;
  s.history_keep_days = c.history_keep_days;
  s.codec_max_bytes = c.codec_max_bytes;
  s.omit_event_flight = c.events_omit_flight_state;
  s.zone_name = c.airport_timezone;
  return s;
}

Result<DecisionSettings> DecisionSettings::FromConfig(const Config& c,
                                                      const std::string& zoneinfo_dir) {
  DecisionSettings s = Values(c);
  auto bytes = TimeZone::ReadTzif(c.airport_timezone, zoneinfo_dir);
  if (!bytes.ok()) return bytes.status();
  if (auto zone = TimeZone::FromTzif(c.airport_timezone, *bytes); !zone.ok()) return zone.status();
  s.zone_tzif = std::move(*bytes);
  return s;
}

std::vector<std::pair<std::string, std::string>> SettingsFields(const DecisionSettings& s) {
  return {
      {"ignore.rules", List(s.ignore_rules)},
      {"pipeline.retry-deterministic", Bool(s.retry_deterministic)},
      {"pipeline.max-attempts", std::to_string(s.max_attempts)},
      {"pipeline.backoff", Durations(s.backoff)},
      {"pipeline.backoff-cap", Ms(s.backoff_cap)},
      {"pipeline.head-deadline", Ms(s.head_deadline)},
      {"identity.include-day-boundary", Bool(s.include_day_boundary)},
      {"identity.window", Ms(s.identity_window)},
      {"schd.snapshot-missing-fields", s.snapshot_clear_missing ? "clear" : "keep"},
      {"history.keep-days", std::to_string(s.history_keep_days)},
      {"codec.max-bytes", std::to_string(s.codec_max_bytes)},
      {"airport.timezone", s.zone_name},
      {"airport.timezone-rules", s.zone_tzif.empty() ? "" : ToHex(Sha256(s.zone_tzif))},
      {std::string(kEventFlightStateKey), s.omit_event_flight ? "omit" : "full"},
  };
}

std::string CanonicalSettings(const DecisionSettings& s) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : SettingsFields(s)) {
    // Added after logs with SETTINGS records existed: its default is left
    // out, so that their records keep their canonical text and the chained
    // digests built on it.
    if (k == kEventFlightStateKey && v == "full") continue;
    if (!first) out.push_back(',');
    first = false;
    AppendJsonString(k, &out);
    out.push_back(':');
    AppendJsonString(v, &out);
  }
  out.push_back('}');
  return out;
}

std::string DescribeSettingsChange(const DecisionSettings& from, const DecisionSettings& to) {
  const auto a = SettingsFields(from);
  const auto b = SettingsFields(to);
  std::string out;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i].second == b[i].second) continue;
    std::string old_value = a[i].second, new_value = b[i].second;
    if (a[i].first == "airport.timezone-rules") {  // a hash: the first 12 digits tell them apart
      old_value = old_value.substr(0, 12);
      new_value = new_value.substr(0, 12);
    }
    if (!out.empty()) out += "; ";
    out.append(a[i].first).append(": ").append(old_value).append(" -> ").append(new_value);
  }
  return out;
}

}  // namespace msgx
