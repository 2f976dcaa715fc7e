// `msgx status [--json]`: offsets along the pipeline, outcome counts, the
// mirror's lag and the outbox per target
// (docs/operations.md#looking-at-it-status-inspect-refold). Every source is
// read read-only (the log as a RocksDB secondary, the state read-only), so
// it works while `msgx run` runs. A source that cannot be read is reported as
// unavailable, with why, and the rest is still shown; the exit status is
// then 1 (0 when every configured source answered).
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>

#include "app/command.h"
#include "app/setup.h"
#include "state/log_reader.h"
#include "state/redis_client.h"
#include "state/redis_mirror.h"
#include "state/state_store.h"
#include "stream/pg/pg_session.h"

namespace msgx::app {
namespace {

// One named figure, or why it is missing. Ordered as the pipeline flows.
struct Report {
  struct Value {
    std::string key;
    std::string text;
    std::optional<std::int64_t> number;
  };
  std::vector<Value> values;
  std::vector<std::pair<std::string, std::string>> missing;  // source → why

  void Set(const std::string& k, std::int64_t v) { values.push_back({k, std::to_string(v), v}); }
  void Set(const std::string& k, const std::string& v) { values.push_back({k, v, std::nullopt}); }
  void Missing(const std::string& source, const std::string& why) {
    missing.emplace_back(source, why);
  }
};

void ReadMailbox(const Config& c, Report* r) {
  if (c.mailbox_url.empty()) {
    r->Missing("mailbox", "mailbox.url not set");
    return;
  }
  PgSession pg(c.mailbox_url);
  Status s = pg.Run([&](pqxx::dbtransaction& tx) {
    auto row =
        tx.exec1("SELECT coalesce(max(" + c.mailbox_columns.id + "), 0) FROM " + c.mailbox_table);
    r->Set("mailbox.max_id", row[0].as<std::int64_t>());
  });
  if (!s.ok()) r->Missing("mailbox", s.message());
}

std::string ReadLog(const Config& c, Report* r) {
  const std::string secondary =
      (std::filesystem::temp_directory_path() / ("msgx-status-" + std::to_string(::getpid())))
          .string();
  std::string uuid;
  {
    auto log = LogReader::OpenSecondary(c.state_dir + "/log", secondary);
    if (!log.ok()) {
      r->Missing("log", log.status().message());
    } else {
      uuid = (*log)->log_uuid();
      r->Set("log.uuid", uuid);
      r->Set("log.records", static_cast<std::int64_t>((*log)->next_offset()));
      if (const auto& p = (*log)->capture_progress()) {
        r->Set("capture.watermark", p->watermark);
        r->Set("capture.skipped_ranges", static_cast<std::int64_t>(p->skipped.size()));
        r->Set("capture.late_captured", p->late_captured);
      }
      r->Set("intake.last_command_id", (*log)->last_command_id());
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(secondary, ec);
  return uuid;
}

std::int64_t ReadState(const Config& c, Report* r) {
  auto store = StateStore::Open(c.state_dir + "/state", {false, true});
  if (!store.ok()) {
    r->Missing("state", store.status().message());
    return -1;
  }
  auto meta = (*store)->ReadMeta();
  if (!meta.ok()) {
    r->Missing("state", meta.status().message());
    return -1;
  }
  r->Set("fold.applied_offset", meta->applied_offset);
  r->Set("fold.version", meta->fold_version);
  r->Set("fold.generation", meta->generation);
  std::map<std::string, std::int64_t> counts;
  Status s = (*store)->ForEachOutcome([&](const Outcome& o) {
    std::string k = "outcomes." + std::string(OutcomeStateName(o.state));
    ++counts[k];
    if (o.state == OutcomeState::kDead) ++counts["outcomes.DEAD." + o.error_class];
  });
  if (!s.ok()) r->Missing("outcomes", s.message());
  for (const auto& [k, n] : counts) r->Set(k, n);
  return meta->applied_offset;
}

void ReadMirror(const Config& c, const std::string& uuid, std::int64_t applied, Report* r) {
  auto client = RedisClient::Create(c.redis_url, std::chrono::milliseconds(2000));
  if (!client.ok()) {
    r->Missing("redis", client.status().message());
    return;
  }
  RedisMirror mirror(client->get(), uuid);
  auto pos = mirror.Position();
  if (!pos.ok()) {
    r->Missing("redis", pos.status().message());
    return;
  }
  if (!pos->initialized) {
    r->Set("mirror.offset", "none (not built yet)");
    return;
  }
  r->Set("mirror.offset", pos->offset);
  r->Set("mirror.same_log", pos->log_uuid == uuid ? "yes" : "no (" + pos->log_uuid + ")");
  if (applied >= 0) r->Set("mirror.lag", applied - pos->offset);
}

void ReadOwnDatabase(const Config& c, Report* r) {
  if (c.postgres_url.empty()) {
    r->Missing("postgres", "postgres.url not set");
    return;
  }
  PgSession pg(c.postgres_url);
  Status s = pg.Run([&](pqxx::dbtransaction& tx) {
    pqxx::result p =
        tx.exec("SELECT applied_offset, leader_epoch FROM pipeline WHERE name = 'main'");
    if (!p.empty()) {
      r->Set("postgres.applied_offset", p[0][0].as<std::int64_t>());
      r->Set("postgres.leader_epoch", p[0][1].as<std::int64_t>());
    }
    for (const auto& row : tx.exec(
             "SELECT target, count(*) FILTER (WHERE state = 'PENDING'), "
             "coalesce(extract(epoch FROM now() - min(created_at) FILTER (WHERE state = "
             "'PENDING'))::bigint, 0), count(*) FILTER (WHERE state = 'DEAD'), "
             "count(*) FILTER (WHERE state = 'SENT') FROM msg_event GROUP BY target ORDER BY 1")) {
      const std::string t = "outbox." + row[0].as<std::string>();
      r->Set(t + ".pending", row[1].as<std::int64_t>());
      r->Set(t + ".oldest_pending_s", row[2].as<std::int64_t>());
      r->Set(t + ".dlq", row[3].as<std::int64_t>());
      r->Set(t + ".sent", row[4].as<std::int64_t>());
    }
  });
  if (!s.ok()) r->Missing("postgres", s.message());
}

}  // namespace

void RegisterStatus(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = root.add_subcommand("status", "Offsets, outcomes, mirror lag and outbox");
  cmd->add_flag("--json", *json, "One JSON object");
  cmd->callback([&global, exit_code, json] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    Report r;
    ReadMailbox(*config, &r);
    const std::string uuid = ReadLog(*config, &r);
    const std::int64_t applied = ReadState(*config, &r);
    ReadMirror(*config, uuid, applied, &r);
    ReadOwnDatabase(*config, &r);
    if (*json) {
      rapidjson::StringBuffer buf;
      rapidjson::Writer<rapidjson::StringBuffer> w(buf);
      w.StartObject();
      for (const auto& v : r.values) {
        w.Key(v.key.c_str());
        if (v.number) {
          w.Int64(*v.number);
        } else {
          w.String(v.text.c_str());
        }
      }
      w.Key("unavailable");
      w.StartObject();
      for (const auto& [k, v] : r.missing) {
        w.Key(k.c_str());
        w.String(v.c_str());
      }
      w.EndObject();
      w.EndObject();
      std::cout << buf.GetString() << "\n";
    } else {
      for (const auto& v : r.values) std::cout << v.key << ": " << v.text << "\n";
      for (const auto& [k, v] : r.missing) std::cout << k << ": UNAVAILABLE: " << v << "\n";
    }
    *exit_code = r.missing.empty() ? 0 : 1;
  });
}

}  // namespace msgx::app
