// `msgx replay (--msg ID… | --class C) | (--event ID… | --target T --dead)`
// (docs/operations.md#replaying-msgx-replay; docs/fold.md#replay;
// docs/dispatch.md#replay-of-dead-events).
//
// Messages: the ids are resolved now (--class reads the state store's DEAD
// outcomes of that class, read-only, so it works while `msgx run` runs) and
// queued as one REPLAY_MSG row in msgx_command; the running service appends
// it to the log, and the fold decides each message again at the command's
// offset. MALFORMED and PROTOCOL are never replayed: --class refuses them,
// and explicit ids of such messages are refused silently by the fold.
// Events: DEAD outbox events return to PENDING at once (stream/dispatch/event_replay.h).
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>

#include "app/command.h"
#include "app/setup.h"
#include "state/state_store.h"
#include "stream/dispatch/event_replay.h"
#include "stream/pg/pg_session.h"

namespace msgx::app {
namespace {

struct ReplayOptions {
  std::vector<std::int64_t> msgs;
  std::string error_class;
  std::vector<std::int64_t> events;
  std::string target;
  bool dead = false;
  std::string by;
};

// Queues one REPLAY_MSG command; returns its command_id.
Result<std::int64_t> QueueReplay(PgSession* pg, const std::vector<std::int64_t>& ids,
                                 const std::string& by) {
  rapidjson::StringBuffer buf;
  rapidjson::Writer<rapidjson::StringBuffer> w(buf);
  w.StartObject();
  w.Key("mailbox_ids");
  w.StartArray();
  for (auto id : ids) w.Int64(id);
  w.EndArray();
  w.EndObject();
  std::int64_t command_id = 0;
  Status s = pg->Run([&](pqxx::dbtransaction& tx) {
    command_id = tx.exec_params1(
                       "INSERT INTO msgx_command (kind, args_json, requested_by) "
                       "VALUES ('REPLAY_MSG', $1, $2) RETURNING command_id",
                       std::string(buf.GetString(), buf.GetSize()), by)[0]
                     .as<std::int64_t>();
  });
  if (!s.ok()) return s;
  return command_id;
}

int Run(const Config& config, const ReplayOptions& o) {
  const int groups = (!o.msgs.empty()) + (!o.error_class.empty()) + (!o.events.empty()) +
                     (!o.target.empty() || o.dead);
  if (groups != 1 || (!o.target.empty() && !o.dead) || (o.dead && o.target.empty())) {
    std::cerr << "msgx replay: give exactly one of --msg ID…, --class C, --event ID…, "
                 "--target T --dead\n";
    return 2;
  }
  if (config.postgres_url.empty()) {
    std::cerr << "msgx replay: postgres.url is not configured\n";
    return 2;
  }
  PgSession pg(config.postgres_url);

  if (!o.events.empty() || !o.target.empty()) {
    auto n = o.events.empty()
                 ? ReplayDeadEventsOfTarget(&pg, o.target, SystemClock::Default()->NowMicros())
                 : ReplayDeadEvents(&pg, o.events, SystemClock::Default()->NowMicros());
    if (!n.ok()) {
      std::cerr << "msgx replay: " << n.status().ToString() << "\n";
      return 1;
    }
    std::cout << "returned " << *n << " DEAD event(s) to PENDING\n";
    return 0;
  }

  std::vector<std::int64_t> ids = o.msgs;
  if (!o.error_class.empty()) {
    const std::string& c = o.error_class;
    if (c == "MALFORMED" || c == "PROTOCOL") {
      std::cerr << "msgx replay: " << c
                << " messages are never replayed (docs/operations.md#replaying-msgx-replay)\n";
      return 2;
    }
    if (c == "QUARANTINED") {
      std::cerr << "msgx replay: QUARANTINED messages crashed the processor; replay them one by "
                   "one with --msg ID (docs/operations.md#replaying-msgx-replay)\n";
      return 2;
    }
    if (c != "UNSUPPORTED" && c != "CODEC_ERROR" && c != "EXHAUSTED") {
      std::cerr << "msgx replay: --class must be UNSUPPORTED, CODEC_ERROR or EXHAUSTED\n";
      return 2;
    }
    auto store = StateStore::Open(config.state_dir + "/state", {false, true});
    if (!store.ok()) {
      std::cerr << "msgx replay: state store: " << store.status().ToString() << "\n";
      return 1;
    }
    Status s = (*store)->ForEachOutcome([&](const Outcome& out) {
      if (out.state == OutcomeState::kDead && out.error_class == c) ids.push_back(out.mailbox_id);
    });
    if (!s.ok()) {
      std::cerr << "msgx replay: " << s.ToString() << "\n";
      return 1;
    }
    if (ids.empty()) {
      std::cout << "no DEAD " << c << " messages: nothing to replay\n";
      return 0;
    }
  }
  auto command_id = QueueReplay(&pg, ids, o.by);
  if (!command_id.ok()) {
    std::cerr << "msgx replay: " << command_id.status().ToString() << "\n";
    return 1;
  }
  std::cout << "queued msgx_command " << *command_id << ": replay of " << ids.size()
            << " message(s)\n";
  return 0;
}

}  // namespace

void RegisterReplay(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  auto o = std::make_shared<ReplayOptions>();
  const char* user = std::getenv("USER");
  o->by = user != nullptr ? user : "operator";
  CLI::App* cmd = root.add_subcommand("replay", "Replay DEAD messages or DEAD outbox events");
  cmd->add_option("--msg", o->msgs, "Mailbox ids of DEAD messages");
  cmd->add_option("--class", o->error_class, "Every DEAD message of this class");
  cmd->add_option("--event", o->events, "event_ids of DEAD outbox events");
  cmd->add_option("--target", o->target, "Outbox target, with --dead (e.g. KAFKA:msg)");
  cmd->add_flag("--dead", o->dead, "Every DEAD event of --target");
  cmd->add_option("--by", o->by, "Who asks (msgx_command.requested_by)");
  cmd->callback([&global, exit_code, o] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    *exit_code = Run(*config, *o);
  });
}

}  // namespace msgx::app
