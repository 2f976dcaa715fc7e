#include "stream/service/status_model.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>

#include "state/log_reader.h"
#include "state/log_record.h"
#include "state/outcome_counts.h"
#include "state/pending_batch.h"
#include "state/redis_client.h"
#include "state/redis_mirror.h"
#include "state/state_store.h"
#include "stream/capture/mailbox_factory.h"
#include "stream/pg/outbox_delivery.h"
#include "stream/pg/pg_session.h"

namespace msgx {
namespace {

using JsonValue = rapidjson::Value;

// Builds the document section by section.
class Builder {
 public:
  Builder() { doc_.SetObject(); }

  JsonValue& Section(const char* name) {
    if (!doc_.HasMember(name)) {
      doc_.AddMember(JsonValue(name, Alloc()), JsonValue(rapidjson::kObjectType), Alloc());
    }
    return doc_[name];
  }
  void Set(JsonValue& obj, const std::string& key, std::int64_t v) {
    obj.AddMember(JsonValue(key.c_str(), Alloc()), JsonValue(static_cast<std::int64_t>(v)),
                  Alloc());
  }
  void Set(JsonValue& obj, const std::string& key, const std::string& v) {
    obj.AddMember(JsonValue(key.c_str(), Alloc()), JsonValue(v.c_str(), Alloc()), Alloc());
  }
  void SetBool(JsonValue& obj, const std::string& key, bool v) {
    obj.AddMember(JsonValue(key.c_str(), Alloc()), JsonValue(v), Alloc());
  }
  void Missing(const std::string& source, const std::string& why) {
    Set(Section("unavailable"), source, why);
  }
  rapidjson::Document::AllocatorType& Alloc() { return doc_.GetAllocator(); }
  rapidjson::Document Take() { return std::move(doc_); }

 private:
  rapidjson::Document doc_;
};

// The mailbox section, through the Mailbox adapter mailbox.url names (the
// same read capture's lag metric makes), on PostgreSQL and MariaDB/MySQL
// alike.
void ReadMailbox(const Config& c, Builder* b) {
  if (c.mailbox_url.empty()) return b->Missing("mailbox", "mailbox.url not set");
  auto mailbox = MakeMailbox(c, SystemClock::Default());
  if (!mailbox.ok()) return b->Missing("mailbox", mailbox.status().message());
  Result<std::int64_t> max_id = (*mailbox)->MaxId();
  if (!max_id.ok()) return b->Missing("mailbox", max_id.status().message());
  b->Set(b->Section("mailbox"), "max_id", *max_id);
}

// The decision settings in force: the log's last SETTINGS record
// (docs/fold.md#settings-in-the-log).
void ReadSettings(const LogReader& log, Builder* b) {
  JsonValue& s = b->Section("settings");
  const auto offset = log.last_settings_offset();
  if (!offset) {
    b->Set(s, "since_offset", std::int64_t{-1});  // none recorded yet
    return;
  }
  std::vector<LogEntry> one;
  if (Status st = log.Read(*offset, 1, &one); !st.ok() || one.empty()) {
    b->Missing("settings", st.ok() ? "the SETTINGS record is missing" : st.message());
    return;
  }
  auto args = ToSettingsArgs(*offset, one[0].bytes);
  if (!args.ok()) {
    b->Missing("settings", args.status().message());
    return;
  }
  b->Set(s, "since_offset", static_cast<std::int64_t>(*offset));
  for (const auto& [k, v] : SettingsFields(args->settings)) b->Set(s, k, v);
}

// Returns the log's uuid and record count ("" and -1 when unreadable).
std::pair<std::string, std::int64_t> ReadLog(const Config& c, Builder* b) {
  static std::atomic<int> seq{0};
  const std::string secondary =
      (std::filesystem::temp_directory_path() /
       ("msgx-status-" + std::to_string(::getpid()) + "-" + std::to_string(seq++)))
          .string();
  std::pair<std::string, std::int64_t> out{"", -1};
  {
    auto log = LogReader::OpenSecondary(c.state_dir + "/log", secondary);
    if (!log.ok()) {
      b->Missing("log", log.status().message());
    } else {
      out = {(*log)->log_uuid(), static_cast<std::int64_t>((*log)->next_offset())};
      JsonValue& l = b->Section("log");
      b->Set(l, "uuid", out.first);
      b->Set(l, "records", out.second);
      JsonValue& cap = b->Section("capture");
      if (const auto& p = (*log)->capture_progress()) {
        b->Set(cap, "watermark", p->watermark);
        b->Set(cap, "skipped_ranges", static_cast<std::int64_t>(p->skipped.size()));
        b->Set(cap, "late_captured", p->late_captured);
      }
      b->Set(b->Section("intake"), "last_command_id", (*log)->last_command_id());
      ReadSettings(**log, b);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(secondary, ec);
  return out;
}

// Returns the applied offset (-1 when unreadable or nothing folded).
std::int64_t ReadState(const Config& c, std::int64_t log_records, Builder* b) {
  auto store = StateStore::Open(c.state_dir + "/state", {false, true});
  if (!store.ok()) {
    b->Missing("state", store.status().message());
    return -1;
  }
  auto meta = (*store)->ReadMeta();
  if (!meta.ok()) {
    b->Missing("state", meta.status().message());
    return -1;
  }
  JsonValue& f = b->Section("fold");
  b->Set(f, "applied_offset", meta->applied_offset);
  b->Set(f, "version", meta->fold_version);
  b->Set(f, "generation", meta->generation);
  if (log_records >= 0) b->Set(f, "lag", log_records - 1 - meta->applied_offset);
  // The store's own counts; a store an older msgx wrote last has none that
  // are current, and its outcomes are counted by reading them all.
  auto counts = (*store)->CountOutcomes();
  if (!counts.ok()) {
    b->Missing("outcomes", counts.status().message());
  } else {
    JsonValue& o = b->Section("outcomes");
    for (const auto& [k, n] : counts->by_state) b->Set(o, k, n);
    JsonValue classes(rapidjson::kObjectType);
    for (const auto& [k, n] : counts->dead_by_class) b->Set(classes, k, n);
    o.AddMember("dead_by_class", classes, b->Alloc());
  }
  return meta->applied_offset;
}

void ReadMirror(const Config& c, const std::string& uuid, std::int64_t applied, Builder* b) {
  if (c.redis_url.empty()) return b->Missing("redis", "redis.url not set");
  auto client = RedisClient::Create(c.redis_url, std::chrono::milliseconds(2000));
  if (!client.ok()) return b->Missing("redis", client.status().message());
  RedisMirror mirror(client->get(), uuid);
  auto pos = mirror.Position();
  if (!pos.ok()) return b->Missing("redis", pos.status().message());
  JsonValue& m = b->Section("mirror");
  b->SetBool(m, "built", pos->initialized);
  if (!pos->initialized) return;
  b->Set(m, "offset", pos->offset);
  b->SetBool(m, "same_log", pos->log_uuid == uuid);
  if (applied >= 0) b->Set(m, "lag", applied - pos->offset);
}

// The outbox figures of each target, from the indexes a dispatcher uses:
// the target's partial PENDING index (V6) from its delivered position up,
// the replayed events below it (V8), and msg_event_dead_idx (V9) for
// DEAD (stream/pg/outbox_delivery.h); and the delivered position itself. The target is a literal,
// not a parameter, so the planner can use the partial index. Delivered events are not counted: they
// are the events of the whole retention
// (`pipeline.event-retention`, a week), and counting them read the whole
// outbox on every call (docs/operations.md#status).
std::string OutboxQuery() {
  std::string sql;
  for (std::string_view target : {kTargetMsg, kTargetRef, kTargetSchd}) {
    const std::string t = PgTextLiteral(target);
    const std::string above = "FROM msg_event WHERE " + UndeliveredAboveSql(t);
    const std::string replayed = "FROM msg_event WHERE " + UndeliveredReplayedSql(t);
    if (!sql.empty()) sql.append(" UNION ALL ");
    sql.append("SELECT ").append(t).append("::text, ").append(UndeliveredCountSql(t)).append(", ");
    sql.append("coalesce(extract(epoch FROM now() - least((SELECT min(created_at) ");
    sql.append(above).append("), (SELECT min(created_at) ").append(replayed);
    sql.append(")))::bigint, 0), (SELECT count(*) FROM msg_event WHERE target = ");
    sql.append(t).append(" AND state = 'DEAD'), ").append(DeliveredThroughSql(t));
  }
  return sql + " ORDER BY 1";
}

void ReadOwnDatabase(const Config& c, std::int64_t applied, Builder* b) {
  if (c.postgres_url.empty()) return b->Missing("postgres", "postgres.url not set");
  PgSession pg(c.postgres_url);
  struct Target {
    std::string name;
    std::int64_t pending, oldest_s, dlq, delivered_through;
  };
  std::optional<std::pair<std::int64_t, std::int64_t>> pipeline;
  std::vector<Target> targets;
  Status s = pg.Run([&](pqxx::dbtransaction& tx) {
    pipeline.reset();
    targets.clear();
    pqxx::result p =
        tx.exec("SELECT applied_offset, leader_epoch FROM pipeline WHERE name = 'main'");
    if (!p.empty()) pipeline = {p[0][0].as<std::int64_t>(), p[0][1].as<std::int64_t>()};
    for (const auto& row : tx.exec(OutboxQuery())) {
      targets.push_back({row[0].as<std::string>(), row[1].as<std::int64_t>(),
                         row[2].as<std::int64_t>(), row[3].as<std::int64_t>(),
                         row[4].as<std::int64_t>()});
    }
  });
  if (!s.ok()) return b->Missing("postgres", s.message());
  JsonValue& pgv = b->Section("postgres");
  if (pipeline) {
    b->Set(pgv, "applied_offset", pipeline->first);
    b->Set(pgv, "leader_epoch", pipeline->second);
    if (applied >= 0) b->Set(pgv, "lag", applied - pipeline->first);
  }
  JsonValue& outbox = b->Section("outbox");
  for (const Target& t : targets) {
    JsonValue v(rapidjson::kObjectType);
    b->Set(v, "pending", t.pending);
    b->Set(v, "oldest_pending_s", t.oldest_s);
    b->Set(v, "dlq", t.dlq);
    b->Set(v, "delivered_through", t.delivered_through);
    outbox.AddMember(JsonValue(t.name.c_str(), b->Alloc()), v, b->Alloc());
  }
}

void AddLive(const LiveStatus& live, Builder* b) {
  JsonValue& svc = b->Section("service");
  b->SetBool(svc, "running", true);
  b->SetBool(svc, "leading", live.leading);
  b->Set(svc, "leader_epoch", live.leader_epoch);
  b->Set(svc, "waiting", live.waiting);
  JsonValue& stages = b->Section("stages");
  for (const StageHealth& h : live.stages) {
    JsonValue v(rapidjson::kObjectType);
    b->Set(v, "state", std::string(StageStateName(h.state)));
    b->Set(v, "reason", h.reason);
    b->Set(v, "since_micros", h.since_micros);
    b->SetBool(v, "needs_leadership", h.needs_leadership);
    b->Set(v, "steps", h.steps);
    b->Set(v, "stalls", h.stalls);
    b->Set(v, "step_micros", h.step_micros);
    for (const auto& [k, n] : h.figures) b->Set(v, k, n);
    stages.AddMember(JsonValue(h.name.c_str(), b->Alloc()), v, b->Alloc());
  }
}

std::string Scalar(const JsonValue& v) {
  if (v.IsString()) return v.GetString();
  if (v.IsBool()) return v.GetBool() ? "yes" : "no";
  if (v.IsInt64()) return std::to_string(v.GetInt64());
  return ToJson(v);
}

}  // namespace

rapidjson::Document BuildStatus(const Config& config, const LiveStatus* live) {
  Builder b;
  b.Section("unavailable");  // first, so that every section after it keeps pipeline order
  ReadMailbox(config, &b);
  const auto [uuid, records] = ReadLog(config, &b);
  const std::int64_t applied = ReadState(config, records, &b);
  ReadMirror(config, uuid, applied, &b);
  ReadOwnDatabase(config, applied, &b);
  if (live != nullptr) {
    AddLive(*live, &b);
  } else {
    b.SetBool(b.Section("service"), "running", false);
    b.Section("stages");
  }
  rapidjson::Document doc = b.Take();
  // "unavailable" last: move it to the end.
  JsonValue unavailable;
  unavailable.CopyFrom(doc["unavailable"], doc.GetAllocator());
  doc.RemoveMember("unavailable");
  doc.AddMember("unavailable", unavailable, doc.GetAllocator());
  return doc;
}

void MergeLiveFields(const rapidjson::Value& live_doc, rapidjson::Document* doc) {
  auto& a = doc->GetAllocator();
  for (const char* key : {"service", "stages"}) {
    JsonValue copy;
    if (live_doc.IsObject() && live_doc.HasMember(key)) {
      copy.CopyFrom(live_doc[key], a);
    } else if (std::string_view(key) == "service") {
      copy.SetObject();
      copy.AddMember("running", false, a);
    } else {
      copy.SetObject();
    }
    if (doc->HasMember(key)) {
      (*doc)[key] = copy;
    } else {
      doc->AddMember(JsonValue(key, a), copy, a);
    }
  }
}

bool AllSourcesAnswered(const rapidjson::Document& doc) {
  return !doc.HasMember("unavailable") || doc["unavailable"].ObjectEmpty();
}

std::string ToJson(const rapidjson::Value& v) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  v.Accept(w);
  return std::string(buf.GetString(), buf.GetSize());
}

std::string ToTable(const rapidjson::Document& doc) {
  std::ostringstream out;
  for (auto s = doc.MemberBegin(); s != doc.MemberEnd(); ++s) {
    const std::string section = s->name.GetString();
    if (section == "stages" || section == "unavailable" || !s->value.IsObject()) continue;
    for (auto f = s->value.MemberBegin(); f != s->value.MemberEnd(); ++f) {
      if (f->value.IsObject()) {  // outbox targets, dead_by_class
        for (auto g = f->value.MemberBegin(); g != f->value.MemberEnd(); ++g) {
          out << section << "." << f->name.GetString() << "." << g->name.GetString() << ": "
              << Scalar(g->value) << "\n";
        }
      } else {
        out << section << "." << f->name.GetString() << ": " << Scalar(f->value) << "\n";
      }
    }
  }
  if (doc.HasMember("stages") && !doc["stages"].ObjectEmpty()) {
    char line[256];
    std::snprintf(line, sizeof line, "\n%-20s %-12s %10s %7s  %s\n", "STAGE", "STATE", "STEPS",
                  "STALLS", "REASON");
    out << line;
    for (auto st = doc["stages"].MemberBegin(); st != doc["stages"].MemberEnd(); ++st) {
      const JsonValue& v = st->value;
      auto str = [&](const char* k) { return v.HasMember(k) ? Scalar(v[k]) : std::string(); };
      std::snprintf(line, sizeof line, "%-20s %-12s %10s %7s  %s\n", st->name.GetString(),
                    str("state").c_str(), str("steps").c_str(), str("stalls").c_str(),
                    str("reason").c_str());
      out << line;
    }
  }
  if (doc.HasMember("unavailable")) {
    for (auto u = doc["unavailable"].MemberBegin(); u != doc["unavailable"].MemberEnd(); ++u) {
      out << u->name.GetString() << ": UNAVAILABLE: " << u->value.GetString() << "\n";
    }
  }
  return out.str();
}

}  // namespace msgx
