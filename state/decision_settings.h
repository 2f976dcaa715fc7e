// DecisionSettings: every setting that changes what the fold decides, as the
// log records them (docs/fold.md#settings-in-the-log).
//
// The service takes them from its configuration at start-up and appends a
// SETTINGS record when they differ from the last one in the log; the fold,
// `msgx refold`, a state rebuild and `inspect --at` then decide each record
// with the settings in force at its offset, never with today's file. The
// airport time zone travels as its rules (the TZif bytes), so a tzdata update
// cannot change an old decision.
//
// Thread-safety: plain values and pure functions, except FromConfig (file I/O,
// start-up only).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/result.h"

namespace msgx {

// The defaults are the configuration's (base/config.h): Values(Config{}).
struct DecisionSettings {
  // ignore.rules, as written (docs/codec.md#ignore-rules).
  std::vector<std::string> ignore_rules;
  // Seed mode: pipeline.retry-deterministic and the retry schedule that
  // decides when an EXHAUST command is appended (the command itself is in
  // the log; the schedule is recorded so that the log says what was in force).
  bool retry_deterministic = false;
  int max_attempts = 0;
  std::vector<Millis> backoff;
  Millis backoff_cap{0};
  Millis head_deadline{0};
  // identity.include-day-boundary, identity.window.
  bool include_day_boundary = false;
  Millis identity_window{0};
  // schd.snapshot-missing-fields = clear.
  bool snapshot_clear_missing = false;
  // history.keep-days (a sweep command without a cutoff).
  int history_keep_days = 0;
  // codec.max-bytes: a larger message ends DEAD.
  std::int64_t codec_max_bytes = 0;
  // events.flight-state = omit: KAFKA:msg events without the flight's state.
  bool omit_event_flight = false;
  // airport.timezone: the IANA name and the zone's TZif bytes. Empty bytes
  // (tests only) mean "the zone the caller supplies".
  std::string zone_name;
  std::string zone_tzif;

  bool operator==(const DecisionSettings&) const = default;

  // The configuration's values without the zone's rules (zone_tzif empty).
  // Pure.
  static DecisionSettings Values(const Config& config);
  // The configuration's values, with the zone's rules read from
  // `<zoneinfo_dir>/<airport.timezone>`. kConfig when the zone cannot be
  // read or is not a TZif file.
  static Result<DecisionSettings> FromConfig(
      const Config& config, const std::string& zoneinfo_dir = "/usr/share/zoneinfo");
};

// The canonical text of `s` (the chained digest's bytes for a SETTINGS
// record): every value in a fixed order, the TZif as its SHA-256. A setting
// added later (events.flight-state) appears only when it is not its default,
// so a record written before it existed keeps its text.
std::string CanonicalSettings(const DecisionSettings& s);

// What changed from `from` to `to`, one "key: old -> new" per change joined
// by "; " ("" when equal). The zone's rules show as a short hash.
std::string DescribeSettingsChange(const DecisionSettings& from, const DecisionSettings& to);

// The settings as "key: value" pairs in the order of CanonicalSettings, for
// `msgx status` and logs.
std::vector<std::pair<std::string, std::string>> SettingsFields(const DecisionSettings& s);

}  // namespace msgx
