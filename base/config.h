// Config: every setting (docs/configuration.md#keys-and-defaults), loaded
// once at start-up.
//
// Sources, later wins: built-in defaults < YAML file < MSGX_* environment
// variables. Keys are dotted paths ("pipeline.batch-max", "mailbox.url"); in
// YAML they nest ("pipeline: {batch-max: 1000}") and may sit under an optional
// top-level "msgx:" map. The environment name of a key is "MSGX_" + the path
// upper-cased with "." and "-" as "_" (MSGX_PIPELINE_BATCH_MAX).
// kafka.producer.* keys pass through to librdkafka; from the environment
// MSGX_KAFKA_PRODUCER_LINGER_MS becomes kafka.producer.linger.ms.
//
// An unknown key (in the file, or an MSGX_ variable other than MSGX_CONFIG
// and the MSGX_TEST_* family) and a bad value fail Load() with a kConfig
// Status whose message starts with the key, e.g.
//   pipeline.poll-interval: "-1s" is not a duration
//
// Durations are written "250ms", "1s", "5m", "24h", "7d" or as plain
// integers: milliseconds for keys ending "-ms", otherwise seconds.
//
// Thread-safety: a loaded Config is immutable and may be shared freely.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/result.h"

namespace msgx {

using Millis = std::chrono::milliseconds;

struct MailboxColumns {
  std::string id = "cminmsgs_id";
  std::string message = "cminmsgs_clob_msg";
  std::string received = "cminmsgs_date_received";
  std::string processed = "cminmsgs_date_processed";
  std::string status = "cminmsgs_status";
};

struct PipelineConfig {
  Millis poll_interval{1000};  // floor 50ms
  int batch_max = 1000;
  bool retry_deterministic = false;
  int max_attempts = 5;
  std::vector<Millis> backoff{Millis{1000}, Millis{2000}, Millis{4000}, Millis{8000},
                              Millis{16000}};
  Millis backoff_cap{60'000};
  Millis head_deadline{10 * 60'000};
  Millis event_retention{7LL * 24 * 3'600'000};
  Millis backfill_backoff{30'000};
  Millis backfill_backoff_cap{15 * 60'000};
  Millis overdue_backfill{30LL * 24 * 3'600'000};
  Millis pending_retention{24LL * 3'600'000};
};

struct Config {
  // Where things are.
  std::string mailbox_url;  // postgresql://…, mysql://… or mariadb://… of the mailbox database
  std::string mailbox_table = "cminmsgs";
  MailboxColumns mailbox_columns;
  std::string mailbox_processed_status = "PROCESSED";
  // mailbox.time-zone: the zone of the mailbox's zone-less time columns
  // (MariaDB DATETIME, PostgreSQL TIMESTAMP); empty = airport_timezone.
  // Use MailboxTimeZone() for the zone in force.
  std::string mailbox_time_zone;
  std::string postgres_url;  // own database
  std::string redis_url = "redis://127.0.0.1:6379/0";
  std::string kafka_bootstrap_servers;
  std::map<std::string, std::string> kafka_producer;  // passed to librdkafka
  std::string topic_msg = "msgx.flight.events";
  std::string topic_schd = "msgx.flight.schedule";
  std::string topic_ref = "msgx.reference";
  std::string topic_progress = "msgx.dispatch.progress";  // exactly once (docs/dispatch.md)
  std::string state_dir = "./var/state";
  int state_min_free_mb = 64;     // the free space msgx keeps in state.dir (state/disk_reserve.h)
  int state_block_cache_mb = 64;  // the stores' shared block cache (state/store_memory.h)
  std::string http_listen = "127.0.0.1:8480";
  std::string log_level = "info";
  std::string dev_dir = "./var/dev";  // where `msgx dev up` keeps its services

  // The pipeline's settings (docs/configuration.md#keys-and-defaults).
  PipelineConfig pipeline;
  Millis proc_state_archive_after{24LL * 3'600'000};
  // proc-state.hst-retention: how long an archived outcome stays in
  // proc_state_hst; 0 keeps it forever (docs/jobs.md#archive-retention).
  Millis proc_state_hst_retention{400LL * 86'400'000};
  Millis schd_flush_period{3000};
  int schd_flush_limit = 500;
  std::int64_t schd_max_batch_bytes = 900'000;
  bool schd_snapshot_clear_missing = false;  // schd.snapshot-missing-fields: keep|clear
  // events.flight-state: full|omit. omit leaves the flight's whole state out
  // of KAFKA:msg events (docs/dispatch.md#event-payloads).
  bool events_omit_flight_state = false;
  bool identity_include_day_boundary = false;
  Millis identity_window{30LL * 24 * 3'600'000};
  std::int64_t codec_max_bytes = 16LL * 1024 * 1024;
  Millis capture_max_commit_delay{5 * 60'000};
  // How long SIGTERM's drain may take before the rest is stopped (floor 1s,
  // docs/operations.md#stopping).
  Millis shutdown_drain_timeout{30'000};
  Millis capture_busy_poll_interval{5};  // floor 1ms
  std::int64_t capture_start_after_id = 0;
  int history_keep_days = 2;
  std::string history_sweep_at = "03:30";  // HH:MM airport time
  std::string airport_timezone = "Asia/Shanghai";
  // ignore.rules: TYPE-STYP or TYPE-*, case-insensitive
  // (docs/codec.md#ignore-rules).
  std::vector<std::string> ignore_rules{"LDM-*", "REGN-*", "RSTA-*", "EROR-*"};
};

// The zone of the mailbox's zone-less time columns: mailbox.time-zone, or
// airport.timezone when it is not set (docs/capture.md#mailbox-time).
inline const std::string& MailboxTimeZone(const Config& config) {
  return config.mailbox_time_zone.empty() ? config.airport_timezone : config.mailbox_time_zone;
}

// Environment as name → value; tests pass their own, main passes environ.
using EnvMap = std::map<std::string, std::string>;
EnvMap ProcessEnvironment();

// Loads defaults, then the YAML file at `path` (skipped when empty), then
// the MSGX_* entries of `env`. Fails with kConfig naming the key.
Result<Config> LoadConfig(const std::string& path, const EnvMap& env);

// Every known key with its effective value, one "key: value" per line,
// sorted; `msgx config` prints it. kafka.producer.* values are shown as set.
std::string DescribeConfig(const Config& config);

}  // namespace msgx
