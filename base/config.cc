#include "base/config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <regex>
#include <sstream>

#include "base/config_reference.h"
#include "base/mariadb_url.h"

extern char** environ;  // NOLINT(readability-redundant-declaration)

namespace msgx {
namespace {

// One known key: how to parse a text value into Config, and how to show it.
// `type` and `floor` are the reference's columns (ConfigReference()).
struct KeySpec {
  std::string key;
  std::function<Status(Config&, const std::string&)> set;
  std::function<std::string(const Config&)> show;
  std::string type;
  std::string floor;  // empty: none
};

Status Bad(const std::string& key, const std::string& value, const std::string& why) {
  return Status::Config(key + ": \"" + value + "\" " + why);
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> SplitList(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    item = Trim(item);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

bool ParseInt64(const std::string& s, std::int64_t* out) {
  const char* b = s.data();
  const char* e = s.data() + s.size();
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e && !s.empty();
}

// "250ms", "1s", "5m", "24h", "7d"; a bare integer is in `bare_unit_ms`.
Result<Millis> ParseDuration(const std::string& key, const std::string& text,
                             std::int64_t bare_unit_ms) {
  static const std::regex kRe(R"(^\s*(-?\d+)\s*(ms|s|m|h|d)?\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, kRe)) return Bad(key, text, "is not a duration");
  std::int64_t n = 0;
  if (!ParseInt64(m[1].str(), &n)) return Bad(key, text, "is not a duration");
  if (n < 0) return Bad(key, text, "is negative; durations must be >= 0");
  std::int64_t unit = bare_unit_ms;
  const std::string u = m[2].str();
  if (u == "ms") unit = 1;
  if (u == "s") unit = 1000;
  if (u == "m") unit = 60'000;
  if (u == "h") unit = 3'600'000;
  if (u == "d") unit = 86'400'000;
  if (n > INT64_MAX / unit) return Bad(key, text, "is too large");
  return Millis{n * unit};
}

std::int64_t BareUnitFor(const std::string& key) {
  return key.size() > 3 && key.compare(key.size() - 3, 3, "-ms") == 0 ? 1 : 1000;
}

std::string ShowDuration(Millis d) {
  const std::int64_t ms = d.count();
  if (ms != 0 && ms % 86'400'000 == 0) return std::to_string(ms / 86'400'000) + "d";
  if (ms != 0 && ms % 3'600'000 == 0) return std::to_string(ms / 3'600'000) + "h";
  if (ms != 0 && ms % 60'000 == 0) return std::to_string(ms / 60'000) + "m";
  if (ms != 0 && ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  return std::to_string(ms) + "ms";
}

// "16MiB", "900000", "900kB".
Result<std::int64_t> ParseBytes(const std::string& key, const std::string& text) {
  static const std::regex kRe(R"(^\s*(-?\d+)\s*(B|kB|KB|KiB|MB|MiB|GB|GiB)?\s*$)");
  std::smatch m;
  std::int64_t n = 0;
  if (!std::regex_match(text, m, kRe) || !ParseInt64(m[1].str(), &n)) {
    return Bad(key, text, "is not a byte size");
  }
  if (n <= 0) return Bad(key, text, "must be positive");
  const std::string u = m[2].str();
  std::int64_t unit = 1;
  if (u == "kB" || u == "KB") unit = 1000;
  if (u == "KiB") unit = 1024;
  if (u == "MB") unit = 1'000'000;
  if (u == "MiB") unit = 1024LL * 1024;
  if (u == "GB") unit = 1'000'000'000;
  if (u == "GiB") unit = 1024LL * 1024 * 1024;
  if (n > INT64_MAX / unit) return Bad(key, text, "is too large");
  return n * unit;
}

Result<std::int64_t> ParseIntIn(const std::string& key, const std::string& text, std::int64_t lo,
                                std::int64_t hi) {
  std::int64_t n = 0;
  if (!ParseInt64(Trim(text), &n)) return Bad(key, text, "is not an integer");
  if (n < lo || n > hi) {
    return Bad(key, text,
               "is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  }
  return n;
}

Result<bool> ParseBool(const std::string& key, const std::string& text) {
  std::string t = Trim(text);
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
  if (t == "true" || t == "yes" || t == "on" || t == "1") return true;
  if (t == "false" || t == "no" || t == "off" || t == "0") return false;
  return Bad(key, text, "is not a boolean (true|false)");
}

// Empty is allowed (not configured); commands that need the URL say so.
Status CheckUrl(const std::string& key, const std::string& text,
                std::initializer_list<const char*> schemes) {
  if (text.empty()) return Status::Ok();
  for (const char* s : schemes) {
    const std::string prefix = std::string(s) + "://";
    if (text.rfind(prefix, 0) == 0 && text.size() > prefix.size()) return Status::Ok();
  }
  std::string want;
  for (const char* s : schemes) want += std::string(want.empty() ? "" : " or ") + s + "://…";
  return Bad(key, text, "is not a URL (" + want + ")");
}

Status CheckHostPort(const std::string& key, const std::string& text) {
  static const std::regex kRe(R"(^[A-Za-z0-9_.\-\[\]:]+:\d{1,5}$)");
  if (!std::regex_match(text, kRe)) return Bad(key, text, "is not host:port");
  return Status::Ok();
}

Status CheckIdentifier(const std::string& key, const std::string& text) {
  static const std::regex kRe(R"(^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$)");
  if (!std::regex_match(text, kRe)) return Bad(key, text, "is not a SQL identifier");
  return Status::Ok();
}

// An IANA zone name with its file under $TZDIR or /usr/share/zoneinfo.
Status CheckTimeZone(const std::string& key, const std::string& v) {
  static const std::regex kRe(R"(^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$)");
  if (!std::regex_match(v, kRe)) return Bad(key, v, "is not a time zone name");
  const char* dir = std::getenv("TZDIR");
  std::filesystem::path p = std::filesystem::path(dir ? dir : "/usr/share/zoneinfo") / v;
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) {
    return Bad(key, v, "is not a known time zone (" + p.string() + " not found)");
  }
  return Status::Ok();
}

std::string JoinDurations(const std::vector<Millis>& v) {
  std::string s;
  for (const auto& d : v) s += (s.empty() ? "" : ",") + ShowDuration(d);
  return s;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ",") + x;
  return s;
}

// Builders for the common kinds of key.
KeySpec Text(const std::string& key, const std::string& type, std::string Config::*field,
             const std::function<Status(const std::string&, const std::string&)>& check = nullptr) {
  return {key,
          [key, field, check](Config& c, const std::string& v) {
            if (check) {
              Status s = check(key, v);
              if (!s.ok()) return s;
            }
            c.*field = v;
            return Status::Ok();
          },
          [field](const Config& c) { return c.*field; }, type, ""};
}

KeySpec Duration(const std::string& key, const std::function<Millis&(Config&)>& field,
                 Millis floor = Millis{0}) {
  return {key,
          [key, field, floor](Config& c, const std::string& v) {
            auto d = ParseDuration(key, v, BareUnitFor(key));
            if (!d.ok()) return d.status();
            if (*d < floor) return Bad(key, v, "is below the floor of " + ShowDuration(floor));
            field(c) = *d;
            return Status::Ok();
          },
          [field](const Config& c) {
            Config copy = c;
            return ShowDuration(field(copy));
          },
          "duration", floor.count() > 0 ? ShowDuration(floor) : ""};
}

template <typename Int>
KeySpec Integer(const std::string& key, const std::function<Int&(Config&)>& field, std::int64_t lo,
                std::int64_t hi) {
  return {key,
          [key, field, lo, hi](Config& c, const std::string& v) {
            auto n = ParseIntIn(key, v, lo, hi);
            if (!n.ok()) return n.status();
            field(c) = static_cast<Int>(*n);
            return Status::Ok();
          },
          [field](const Config& c) {
            Config copy = c;
            return std::to_string(field(copy));
          },
          "integer", std::to_string(lo) + ".." + std::to_string(hi)};
}

KeySpec Boolean(const std::string& key, const std::function<bool&(Config&)>& field) {
  return {key,
          [key, field](Config& c, const std::string& v) {
            auto b = ParseBool(key, v);
            if (!b.ok()) return b.status();
            field(c) = *b;
            return Status::Ok();
          },
          [field](const Config& c) {
            Config copy = c;
            return std::string(field(copy) ? "true" : "false");
          },
          "boolean", ""};
}

// A key of two words: `off_word` sets the field false, `on_word` true.
KeySpec TwoWords(const std::string& key, const std::function<bool&(Config&)>& field,
                 const std::string& off_word, const std::string& on_word) {
  return {key,
          [key, field, off_word, on_word](Config& c, const std::string& v) {
            if (v != off_word && v != on_word) {
              return Bad(key, v, "is not " + off_word + "|" + on_word);
            }
            field(c) = v == on_word;
            return Status::Ok();
          },
          [field, off_word, on_word](const Config& c) {
            Config copy = c;
            return field(copy) ? on_word : off_word;
          },
          off_word + " or " + on_word, ""};
}

const std::vector<KeySpec>& Keys() {
  static const std::vector<KeySpec> keys = [] {
    auto pg = [](const std::string& k, const std::string& v) {
      return CheckUrl(k, v, {"postgresql", "postgres"});
    };
    // The mailbox may be PostgreSQL or MariaDB/MySQL (base/mariadb_url.h).
    auto mailbox_url = [](const std::string& k, const std::string& v) {
      if (!IsMariaDbUrl(v)) return CheckUrl(k, v, {"postgresql", "postgres", "mysql", "mariadb"});
      auto u = ParseMariaDbUrl(v);
      return u.ok() ? Status::Ok() : Status::Config(k + ": " + u.status().message());
    };
    std::vector<KeySpec> k;
    k.push_back(Text("mailbox.url", "URL", &Config::mailbox_url, mailbox_url));
    k.push_back(Text("mailbox.table", "SQL identifier", &Config::mailbox_table, CheckIdentifier));
    auto column = [](const std::string& name, std::string MailboxColumns::*f) {
      const std::string key = "mailbox.columns." + name;
      return KeySpec{key,
                     [key, f](Config& c, const std::string& v) {
                       Status s = CheckIdentifier(key, v);
                       if (s.ok()) c.mailbox_columns.*f = v;
                       return s;
                     },
                     [f](const Config& c) { return c.mailbox_columns.*f; }, "SQL identifier", ""};
    };
    k.push_back(column("id", &MailboxColumns::id));
    k.push_back(column("message", &MailboxColumns::message));
    k.push_back(column("received", &MailboxColumns::received));
    k.push_back(column("processed", &MailboxColumns::processed));
    k.push_back(column("status", &MailboxColumns::status));
    k.push_back(Text("mailbox.processed-status", "text", &Config::mailbox_processed_status,
                     [](const std::string& key, const std::string& v) {
                       if (v.empty() || v.size() > 20)
                         return Bad(key, v, "must be 1..20 characters");
                       return Status::Ok();
                     }));
    k.push_back(Text("mailbox.time-zone", "time zone name", &Config::mailbox_time_zone,
                     [](const std::string& key, const std::string& v) {
                       return v.empty() ? Status::Ok() : CheckTimeZone(key, v);
                     }));
    k.push_back(Text("postgres.url", "URL", &Config::postgres_url, pg));
    k.push_back(Text(
        "redis.url", "URL", &Config::redis_url,
        [](const std::string& key, const std::string& v) { return CheckUrl(key, v, {"redis"}); }));
    k.push_back(Text("kafka.bootstrap-servers", "list of host:port",
                     &Config::kafka_bootstrap_servers,
                     [](const std::string& key, const std::string& v) {
                       for (const auto& hp : SplitList(v)) {
                         Status s = CheckHostPort(key, hp);
                         if (!s.ok()) return Bad(key, v, "is not a list of host:port");
                       }
                       return Status::Ok();
                     }));
    auto topic = [](const std::string& key, const std::string& v) {
      static const std::regex kRe(R"(^[A-Za-z0-9._\-]{1,249}$)");
      if (!std::regex_match(v, kRe)) return Bad(key, v, "is not a Kafka topic name");
      return Status::Ok();
    };
    k.push_back(Text("kafka.topics.msg", "topic name", &Config::topic_msg, topic));
    k.push_back(Text("kafka.topics.schd", "topic name", &Config::topic_schd, topic));
    k.push_back(Text("kafka.topics.ref", "topic name", &Config::topic_ref, topic));
    k.push_back(Text("kafka.topics.progress", "topic name", &Config::topic_progress, topic));
    auto nonempty = [](const std::string& key, const std::string& v) {
      return v.empty() ? Bad(key, v, "must not be empty") : Status::Ok();
    };
    k.push_back(Text("state.dir", "path", &Config::state_dir, nonempty));
    k.push_back(Integer<int>(
        "state.min-free-mb", [](Config& c) -> int& { return c.state_min_free_mb; }, 1, 1'000'000));
    k.push_back(Integer<int>(
        "state.block-cache-mb", [](Config& c) -> int& { return c.state_block_cache_mb; }, 8,
        1'000'000));
    k.push_back(Text("dev.dir", "path", &Config::dev_dir, nonempty));
    k.push_back(Text("http.listen", "host:port", &Config::http_listen, CheckHostPort));
    k.push_back(Text("log.level", "level", &Config::log_level,
                     [](const std::string& key, const std::string& v) {
                       static const std::vector<std::string> kLevels{"trace", "debug", "info",
                                                                     "warn",  "error", "off"};
                       if (std::find(kLevels.begin(), kLevels.end(), v) == kLevels.end()) {
                         return Bad(key, v, "is not one of trace|debug|info|warn|error|off");
                       }
                       return Status::Ok();
                     }));

    k.push_back(Duration(
        "pipeline.poll-interval", [](Config& c) -> Millis& { return c.pipeline.poll_interval; },
        Millis{50}));
    k.push_back(Integer<int>(
        "pipeline.batch-max", [](Config& c) -> int& { return c.pipeline.batch_max; }, 1,
        1'000'000));
    k.push_back(Boolean("pipeline.retry-deterministic",
                        [](Config& c) -> bool& { return c.pipeline.retry_deterministic; }));
    k.push_back(Integer<int>(
        "pipeline.max-attempts", [](Config& c) -> int& { return c.pipeline.max_attempts; }, 1,
        1'000'000));
    k.push_back(KeySpec{"pipeline.backoff-ms",
                        [](Config& c, const std::string& v) {
                          std::vector<Millis> out;
                          for (const auto& item : SplitList(v)) {
                            auto d = ParseDuration("pipeline.backoff-ms", item, 1);
                            if (!d.ok())
                              return Bad("pipeline.backoff-ms", v, "is not a list of durations");
                            out.push_back(*d);
                          }
                          if (out.empty())
                            return Bad("pipeline.backoff-ms", v, "must list at least one duration");
                          c.pipeline.backoff = out;
                          return Status::Ok();
                        },
                        [](const Config& c) { return JoinDurations(c.pipeline.backoff); },
                        "list of durations", ""});
    k.push_back(Duration("pipeline.backoff-cap-ms",
                         [](Config& c) -> Millis& { return c.pipeline.backoff_cap; }));
    k.push_back(Duration("pipeline.head-deadline",
                         [](Config& c) -> Millis& { return c.pipeline.head_deadline; }));
    k.push_back(Duration("pipeline.event-retention",
                         [](Config& c) -> Millis& { return c.pipeline.event_retention; }));
    // Also the processed mark's run interval: a floor, so it never spins.
    k.push_back(Duration(
        "pipeline.backfill-backoff-ms",
        [](Config& c) -> Millis& { return c.pipeline.backfill_backoff; }, Millis{100}));
    k.push_back(Duration("pipeline.backfill-backoff-cap-ms",
                         [](Config& c) -> Millis& { return c.pipeline.backfill_backoff_cap; }));
    k.push_back(Duration("pipeline.overdue-backfill",
                         [](Config& c) -> Millis& { return c.pipeline.overdue_backfill; }));
    k.push_back(Duration("pipeline.pending-retention",
                         [](Config& c) -> Millis& { return c.pipeline.pending_retention; }));
    k.push_back(Duration("proc-state.archive-after",
                         [](Config& c) -> Millis& { return c.proc_state_archive_after; }));
    k.push_back(Duration("proc-state.hst-retention",
                         [](Config& c) -> Millis& { return c.proc_state_hst_retention; }));
    k.push_back(Duration(
        "schd.flush-period", [](Config& c) -> Millis& { return c.schd_flush_period; }, Millis{1}));
    k.push_back(Integer<int>(
        "schd.flush-limit", [](Config& c) -> int& { return c.schd_flush_limit; }, 1, 1'000'000));
    k.push_back(KeySpec{"schd.max-batch-bytes",
                        [](Config& c, const std::string& v) {
                          auto n = ParseBytes("schd.max-batch-bytes", v);
                          if (!n.ok()) return n.status();
                          c.schd_max_batch_bytes = *n;
                          return Status::Ok();
                        },
                        [](const Config& c) { return std::to_string(c.schd_max_batch_bytes); },
                        "byte size", ""});
    k.push_back(TwoWords(
        "schd.snapshot-missing-fields",
        [](Config& c) -> bool& { return c.schd_snapshot_clear_missing; }, "keep", "clear"));
    k.push_back(TwoWords(
        "events.flight-state", [](Config& c) -> bool& { return c.events_omit_flight_state; },
        "full", "omit"));
    k.push_back(Boolean("identity.include-day-boundary",
                        [](Config& c) -> bool& { return c.identity_include_day_boundary; }));
    k.push_back(
        Duration("identity.window", [](Config& c) -> Millis& { return c.identity_window; }));
    k.push_back(KeySpec{"codec.max-bytes",
                        [](Config& c, const std::string& v) {
                          auto n = ParseBytes("codec.max-bytes", v);
                          if (!n.ok()) return n.status();
                          c.codec_max_bytes = *n;
                          return Status::Ok();
                        },
                        [](const Config& c) { return std::to_string(c.codec_max_bytes); },
                        "byte size", ""});
    k.push_back(Duration(
        "shutdown.drain-timeout", [](Config& c) -> Millis& { return c.shutdown_drain_timeout; },
        Millis{1000}));
    k.push_back(Duration(
        "capture.busy-poll-interval",
        [](Config& c) -> Millis& { return c.capture_busy_poll_interval; }, Millis{1}));
    k.push_back(Duration("capture.max-commit-delay",
                         [](Config& c) -> Millis& { return c.capture_max_commit_delay; }));
    k.push_back(Integer<std::int64_t>(
        "capture.start-after-id",
        [](Config& c) -> std::int64_t& { return c.capture_start_after_id; }, 0, INT64_MAX));
    k.push_back(Integer<int>(
        "history.keep-days", [](Config& c) -> int& { return c.history_keep_days; }, 0, 36'500));
    k.push_back(Text("history.sweep-at", "HH:MM or off", &Config::history_sweep_at,
                     [](const std::string& key, const std::string& v) {
                       static const std::regex kRe(R"(^([01]\d|2[0-3]):[0-5]\d$)");
                       if (v == "off") return Status::Ok();
                       if (!std::regex_match(v, kRe)) return Bad(key, v, "is not HH:MM or off");
                       return Status::Ok();
                     }));
    k.push_back(
        Text("airport.timezone", "time zone name", &Config::airport_timezone, CheckTimeZone));
    k.push_back(
        KeySpec{"ignore.rules",
                [](Config& c, const std::string& v) {
                  static const std::regex kRe(R"(^[A-Za-z0-9]{1,8}-([A-Za-z0-9]{1,8}|\*)$)");
                  std::vector<std::string> rules = SplitList(v);
                  for (const auto& r : rules) {
                    if (!std::regex_match(r, kRe)) {
                      return Bad("ignore.rules", r, "is not TYPE-STYP or TYPE-*");
                    }
                  }
                  c.ignore_rules = rules;
                  return Status::Ok();
                },
                [](const Config& c) { return Join(c.ignore_rules); }, "list of TYPE-STYP", ""});
    return k;
  }();
  return keys;
}

const KeySpec* FindKey(const std::string& key) {
  for (const auto& k : Keys()) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

constexpr std::string_view kProducerPrefix = "kafka.producer.";

Status SetKey(Config& c, const std::string& key, const std::string& value) {
  if (key.rfind(kProducerPrefix, 0) == 0 && key.size() > kProducerPrefix.size()) {
    c.kafka_producer[key.substr(kProducerPrefix.size())] = value;
    return Status::Ok();
  }
  const KeySpec* spec = FindKey(key);
  if (spec == nullptr) return Status::Config(key + ": unknown configuration key");
  return spec->set(c, value);
}

std::string EnvName(const std::string& key) {
  std::string e = "MSGX_";
  for (char ch : key) {
    e += (ch == '.' || ch == '-') ? '_'
                                  : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  }
  return e;
}

// Flattens a YAML node into dotted keys; sequences become comma lists.
Status Flatten(const YAML::Node& node, const std::string& prefix,
               std::vector<std::pair<std::string, std::string>>* out) {
  if (node.IsMap()) {
    for (const auto& kv : node) {
      const std::string k = kv.first.as<std::string>();
      std::string path = prefix;
      if (!path.empty()) path += '.';
      path += k;
      Status s = Flatten(kv.second, path, out);
      if (!s.ok()) return s;
    }
    return Status::Ok();
  }
  if (node.IsSequence()) {
    std::string joined;
    for (const auto& item : node) {
      if (!item.IsScalar()) return Status::Config(prefix + ": list items must be scalars");
      joined += (joined.empty() ? "" : ",") + item.as<std::string>();
    }
    out->emplace_back(prefix, joined);
    return Status::Ok();
  }
  if (node.IsNull()) return Status::Config(prefix + ": has no value");
  out->emplace_back(prefix, node.as<std::string>());
  return Status::Ok();
}

}  // namespace

EnvMap ProcessEnvironment() {
  EnvMap env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    std::string kv(*e);
    size_t eq = kv.find('=');
    if (eq != std::string::npos) env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  return env;
}

Result<Config> LoadConfig(const std::string& path, const EnvMap& env) {
  Config c;
  if (!path.empty()) {
    std::vector<std::pair<std::string, std::string>> flat;
    try {
      YAML::Node root = YAML::LoadFile(path);
      if (root.IsMap() && root["msgx"] && root["msgx"].IsMap()) {
        YAML::Node inner = root["msgx"];
        root.remove("msgx");
        Status s = Flatten(inner, "", &flat);
        if (!s.ok()) return s;
      }
      if (!root.IsNull()) {
        if (!root.IsMap()) return Status::Config(path + ": the top level must be a map of keys");
        Status s = Flatten(root, "", &flat);
        if (!s.ok()) return s;
      }
    } catch (const YAML::Exception& e) {
      return Status::Config(path + ": " + e.what());
    }
    for (const auto& [k, v] : flat) {
      Status s = SetKey(c, k, v);
      if (!s.ok()) return Status::Config(s.message() + " (in " + path + ")");
    }
  }

  // Environment: map each known key's env name back to the key.
  std::map<std::string, std::string> env_to_key;
  for (const auto& k : Keys()) env_to_key[EnvName(k.key)] = k.key;
  const std::string producer_env = "MSGX_KAFKA_PRODUCER_";
  for (const auto& [name, value] : env) {
    if (name.rfind("MSGX_", 0) != 0) continue;
    if (name == "MSGX_CONFIG" || name.rfind("MSGX_TEST_", 0) == 0 ||
        name.rfind("MSGX_BUILD_", 0) == 0) {
      continue;
    }
    Status s;
    if (name.rfind(producer_env, 0) == 0 && name.size() > producer_env.size()) {
      std::string prop = name.substr(producer_env.size());
      for (char& ch : prop) {
        ch = ch == '_' ? '.' : static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      }
      s = SetKey(c, std::string(kProducerPrefix) + prop, value);
    } else if (auto it = env_to_key.find(name); it != env_to_key.end()) {
      s = SetKey(c, it->second, value);
    } else {
      s = Status::Config(name + ": unknown configuration variable");
    }
    if (!s.ok()) return Status::Config(s.message() + " (from environment " + name + ")");
  }
  return c;
}

std::vector<KeyReference> ConfigReference() {
  const Config defaults;
  std::vector<KeyReference> out;
  for (const auto& k : Keys()) out.push_back({k.key, k.type, k.show(defaults), k.floor});
  out.push_back({std::string(kProducerPrefix) + "*", "librdkafka property", "", ""});
  std::sort(out.begin(), out.end(),
            [](const KeyReference& a, const KeyReference& b) { return a.key < b.key; });
  return out;
}

std::string DescribeConfig(const Config& config) {
  std::vector<std::string> lines;
  for (const auto& k : Keys()) {
    std::string line = k.key;
    line += ": ";
    line += k.show(config);
    lines.push_back(std::move(line));
  }
  for (const auto& [prop, value] : config.kafka_producer) {
    std::string line(kProducerPrefix);
    line += prop;
    line += ": ";
    line += value;
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

}  // namespace msgx
