#include "tests/support/pipeline_check.h"

#include <gtest/gtest.h>

#include <map>
#include <pqxx/pqxx>
#include <set>

#include "base/config.h"
#include "base/log.h"
#include "codecs/time_zone.h"
#include "state/digest.h"
#include "state/flight.h"
#include "state/redis_client.h"
#include "state/redis_mirror.h"
#include "state/state_store.h"
#include "tests/support/mailbox_reads.h"
#include "tools/fold_tools.h"

namespace msgx::testing {
namespace {

std::string Text(const pqxx::field& f) { return f.is_null() ? std::string() : f.as<std::string>(); }

struct Refolded {
  std::vector<EventRow> events;
  std::map<std::pair<std::string, std::string>, ReferenceRow> refs;  // last write wins
};

// Re-folds the log from offset 0 into a scratch store, as `msgx refold`
// does, and collects the PostgreSQL rows of every batch.
Result<Refolded> Refold(const std::string& state_dir, const std::string& timezone) {
  Config config;
  config.state_dir = state_dir;
  config.airport_timezone = timezone;
  auto scratch = app::ScratchFold::Open(config, app::ScratchDirFor(config, "pipecheck"));
  if (!scratch.ok()) return scratch.status();
  if (Status s = (*scratch)->Run(-1, {}, nullptr); !s.ok()) return s;
  StateStore& store = (*scratch)->store();
  Refolded out;
  auto ranges = store.PendingRanges();
  if (!ranges.ok()) return ranges.status();
  for (const auto& [first, last] : *ranges) {
    auto p = store.PendingCovering(first);
    if (!p.ok()) return p.status();
    for (EventRow& e : (*p)->events) out.events.push_back(std::move(e));
    for (ReferenceRow& row : (*p)->references) out.refs[{row.rtype, row.rkey}] = std::move(row);
  }
  return out;
}

}  // namespace

PipelineCheckResult CheckPipeline(const PipelineCheckInput& in) {
  PipelineCheckResult res;
  (void)InitLogging("error");  // the re-fold would log every skip and every DEAD
  auto problem = [&](std::string p) {
    if (res.problems.size() < 50) res.problems.push_back(std::move(p));
  };
  auto tz = TimeZone::Load(in.timezone);
  if (!tz.ok()) {
    problem(tz.status().ToString());
    return res;
  }
  const TimeZoneAirportZone zone(*tz);
  auto store = StateStore::Open(in.state_dir + "/state", {false, true});
  if (!store.ok()) {
    problem("state store: " + store.status().ToString());
    return res;
  }
  auto meta = (*store)->ReadMeta();
  res.applied_offset = meta->applied_offset;

  // proc_state against the mailbox and the state's outcomes.
  const std::vector<std::int64_t> ids = MailboxIds(in.mailbox_url);
  const std::set<std::int64_t> mailbox(ids.begin(), ids.end());
  res.mailbox_rows = static_cast<std::int64_t>(mailbox.size());
  pqxx::connection own(in.own_url);
  pqxx::nontransaction nt(own);
  std::set<std::int64_t> seen;
  // An ARCHIVED shadow's outcome is its history row's (columns 7..12).
  for (const auto& row : nt.exec(
           "SELECT p.msg_id, p.state, p.error_class, p.last_error, p.prev_error, p.log_offset, "
           "p.backfill_next_at IS NOT NULL, h.msg_id IS NOT NULL, h.state, h.error_class, "
           "h.last_error, h.prev_error, h.log_offset FROM proc_state p LEFT JOIN proc_state_hst h "
           "ON p.state = 'ARCHIVED' AND h.msg_id = p.msg_id")) {
    const auto id = row[0].as<std::int64_t>();
    seen.insert(id);
    ++res.outcomes;
    auto o = (*store)->GetOutcome(id);
    if (!o.ok() || !o->has_value()) {
      problem("proc_state row " + std::to_string(id) + " has no outcome in state");
      continue;
    }
    const Outcome& want = **o;
    const bool archived = Text(row[1]) == "ARCHIVED";
    if (archived && !row[7].as<bool>()) {
      problem("ARCHIVED proc_state row " + std::to_string(id) + " has no proc_state_hst row");
      continue;
    }
    if (archived && row[12].as<std::int64_t>() != row[5].as<std::int64_t>()) {
      problem("ARCHIVED proc_state row " + std::to_string(id) + " is at " + Text(row[5]) +
              ", its proc_state_hst row at " + Text(row[12]));
    }
    const int c = archived ? 8 : 1;  // the outcome's columns: the history's or the row's
    if (Text(row[c]) != OutcomeStateName(want.state) || Text(row[c + 1]) != want.error_class ||
        Text(row[c + 2]) != want.last_error || Text(row[c + 3]) != want.prev_error ||
        row[c + 4].as<std::int64_t>() != want.log_offset || !row[6].as<bool>()) {
      problem(std::string(archived ? "archived " : "") + "proc_state row " + std::to_string(id) +
              " is " + Text(row[c]) + "/" + Text(row[c + 1]) + "/" + Text(row[c + 2]) + " at " +
              Text(row[c + 4]) + "; state says " + std::string(OutcomeStateName(want.state)) + "/" +
              want.error_class + "/" + want.last_error + " at " + std::to_string(want.log_offset));
    }
  }
  for (std::int64_t id : mailbox) {
    auto o = (*store)->GetOutcome(id);
    const bool folded = o.ok() && o->has_value();
    if (folded && !seen.count(id))
      problem("mailbox row " + std::to_string(id) + " has no proc_state row");
    if (!folded && in.captured_only) {
      ++res.unfolded;
    } else if (!folded) {
      problem("mailbox row " + std::to_string(id) + " was never folded");
    }
  }

  // pipeline and fold_batch.
  pqxx::result p = nt.exec("SELECT applied_offset FROM pipeline WHERE name = 'main'");
  if (p.empty() || p[0][0].as<std::int64_t>() != meta->applied_offset) {
    problem("pipeline.applied_offset " + (p.empty() ? std::string("missing") : Text(p[0][0])) +
            " != state applied " + std::to_string(meta->applied_offset));
  }
  pqxx::result fb =
      nt.exec("SELECT last_offset, digest FROM fold_batch ORDER BY last_offset DESC LIMIT 1");
  if (fb.empty() || Text(fb[0][1]) != ToHex(meta->digest)) {
    problem("last fold_batch digest differs from the state's");
  }

  // msg_event against a re-fold.
  auto refolded = Refold(in.state_dir, in.timezone);
  if (!refolded.ok()) {
    problem("re-fold: " + refolded.status().ToString());
    return res;
  }
  std::map<std::string, const EventRow*> want;
  for (const EventRow& e : refolded->events) want[e.event_key] = &e;
  std::map<std::string, std::int64_t> last_version;  // per target|key: order check
  for (const auto& row :
       nt.exec("SELECT event_key, target, coalesce(partition_key, ''), event_type, state_version, "
               "payload_json FROM msg_event ORDER BY event_id")) {
    ++res.events;
    const std::string key = Text(row[0]);
    auto it = want.find(key);
    if (it == want.end()) {
      problem("msg_event " + key + " is not an event of the re-fold");
      continue;
    }
    const EventRow& e = *it->second;
    if (Text(row[1]) != e.target || Text(row[2]) != e.partition_key ||
        Text(row[3]) != e.event_type || row[4].as<std::int64_t>() != e.state_version ||
        Text(row[5]) != e.payload_json) {
      problem("msg_event " + key + " differs from the re-fold's event");
    }
    const std::string order_key = e.target + "|" + e.partition_key;
    auto& last = last_version[order_key];
    if (e.state_version < last) {
      std::string msg = "msg_event " + key;
      msg += " is out of order for ";
      msg += order_key;
      problem(std::move(msg));
    }
    last = e.state_version;
    want.erase(it);
  }
  for (const auto& [key, e] : want) problem("event " + key + " of the re-fold is missing");

  // ref_master against the re-fold's reference rows.
  std::map<std::pair<std::string, std::string>, std::string> refs;
  for (const auto& row : nt.exec("SELECT rtype, rkey, payload_json FROM ref_master")) {
    refs[{Text(row[0]), Text(row[1])}] = Text(row[2]);
  }
  for (const auto& [k, row] : refolded->refs) {
    auto it = refs.find(k);
    if (row.deleted) {
      if (it != refs.end())
        problem("ref_master " + k.first + "/" + k.second + " should be deleted");
    } else if (it == refs.end() || it->second != row.payload_json) {
      problem("ref_master " + k.first + "/" + k.second + " differs from the reference state");
    }
    if (it != refs.end()) refs.erase(it);
  }
  for (const auto& [k, v] : refs) problem("ref_master " + k.first + "/" + k.second + " is extra");

  // Redis against the state's flights.
  if (!in.redis_url.empty()) {
    auto client = RedisClient::Create(in.redis_url);
    if (!client.ok()) {
      problem("redis: " + client.status().ToString());
      return res;
    }
    auto hash = (*client)->Command({"HGETALL", RedisMirror::kHashKey});
    std::map<std::string, std::string> redis;
    if (hash.ok()) {
      for (std::size_t i = 0; i + 1 < hash->elements.size(); i += 2) {
        redis[hash->elements[i].str] = hash->elements[i + 1].str;
      }
    }
    std::map<std::string, std::string> state;
    auto fm = (*store)->ForEachFlight([&](const Flight& f) {
      state[f.flid] = FlightJson(f, zone);
      return Status::Ok();
    });
    if (!fm.ok()) problem("state flights: " + fm.status().ToString());
    if (redis != state) {
      problem("redis flightInfo (" + std::to_string(redis.size()) +
              " flights) differs from state (" + std::to_string(state.size()) + " flights)");
    }
    auto off = (*client)->Command({"HGET", RedisMirror::kMetaKey, "offset"});
    if (!off.ok() || off->str != std::to_string(meta->applied_offset)) {
      problem("redis mirror offset " + (off.ok() ? off->str : off.status().ToString()) +
              " != state applied " + std::to_string(meta->applied_offset));
    }
  }
  return res;
}

void ExpectPipelineConsistent(const PipelineCheckInput& in, std::int64_t rows) {
  const PipelineCheckResult check = CheckPipeline(in);
  for (const std::string& p : check.problems) ADD_FAILURE() << p;
  EXPECT_EQ(check.outcomes, rows);
  EXPECT_EQ(check.mailbox_rows, rows);
}

}  // namespace msgx::testing
