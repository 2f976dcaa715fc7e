#include "tests/support/kafka_check.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <pqxx/pqxx>
#include <regex>
#include <set>
#include <utility>

#include "tests/support/fixtures.h"

namespace msgx::testing {
namespace {

// The event_id ranges of `target` that a reconcile marked SENT without a
// send, from the dispatcher's log lines (stream/dispatch/dispatcher.cc,
// MarkDelivered).
std::vector<std::pair<std::int64_t, std::int64_t>> ReconciledRanges(const std::string& msgx_log,
                                                                    const std::string& target) {
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  if (msgx_log.empty()) return out;
  const std::regex line(
      "\"msg\":\"([^:\"]+:[^:\"]+): [0-9]+ events already in Kafka .* "
      "marked SENT without a send: event_id ([0-9]+)\\.\\.([0-9]+)\"");
  std::ifstream in(msgx_log);
  std::string text;
  std::smatch m;
  while (std::getline(in, text)) {
    if (std::regex_search(text, m, line) && m[1] == target) {
      out.emplace_back(std::stoll(m[2]), std::stoll(m[3]));
    }
  }
  return out;
}

// With MSGX_TEST_KEEP_LOG=<dir>, a failed check copies msgx.log to
// <dir>/<topic>-<pid>.log and says so among its problems: the log of a rare
// failure outlives the test's temporary directory
// (docs/crash-safety.md#the-mock-clusters-duplicates).
void KeepLogOnFailure(const std::string& topic, const std::string& msgx_log, KafkaTailCheck* res) {
  const char* dir = std::getenv("MSGX_TEST_KEEP_LOG");
  if (res->problems.empty() || dir == nullptr || *dir == '\0' || msgx_log.empty()) return;
  const std::filesystem::path to =
      std::filesystem::path(dir) / (topic + "-" + std::to_string(::getpid()) + ".log");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::filesystem::copy_file(msgx_log, to, std::filesystem::copy_options::overwrite_existing, ec);
  res->problems.push_back(ec ? "msgx.log not kept: " + ec.message()
                             : "msgx.log kept as " + to.string());
}

}  // namespace

KafkaTailCheck CheckKafkaTail(const std::string& bootstrap, const std::string& topic,
                              const std::string& own_url, const std::string& target,
                              bool require_once, const std::string& msgx_log) {
  KafkaTailCheck res;
  auto problem = [&](std::string p) {
    if (res.problems.size() < 50) res.problems.push_back(std::move(p));
  };
  // "in <topic><what><key>"
  auto in_topic = [&](const char* what, const std::string& key) {
    std::string p = "in " + topic;
    p += what;
    p += key;
    problem(std::move(p));
  };
  struct Event {
    std::int64_t id = 0;
    std::string payload;
    bool sent = false;
  };
  std::map<std::string, Event> events;  // by event_key, the msgx-event-id
  std::set<std::int64_t> sent;
  {
    pqxx::connection c(own_url);
    pqxx::nontransaction nt(c);
    for (const auto& row : nt.exec_params(
             "SELECT event_key, event_id, payload_json, state = 'SENT' FROM msg_event_state "
             "WHERE target = $1",
             target)) {
      Event e{row[1].as<std::int64_t>(), row[2].as<std::string>(), row[3].as<bool>()};
      if (e.sent) sent.insert(e.id);
      events.emplace(row[0].as<std::string>(), std::move(e));
    }
  }
  std::atomic<bool> at_end{false};
  const std::vector<ConsumedMessage> got = ConsumeTopicUntil(
      bootstrap, topic, SIZE_MAX, std::chrono::seconds(30), [&] { return at_end.load(); }, &at_end);
  res.read = got.size();
  std::set<std::int64_t> read;
  std::map<std::string, std::int64_t> last_per_key;  // event_id of its last first appearance
  for (const ConsumedMessage& m : got) {
    auto header = m.headers.find("msgx-event-id");
    if (header == m.headers.end()) {
      in_topic(" without msgx-event-id: a message with key ", m.key);
      continue;
    }
    const std::string& key = header->second;
    auto it = events.find(key);
    if (it == events.end()) {
      in_topic(" but not an event of the target: ", key);
      continue;
    }
    const Event& e = it->second;
    if (m.value != e.payload) in_topic(" with other bytes than its event: ", key);
    if (!e.sent) in_topic(" but not SENT: ", key);
    if (res.oldest_event_id < 0) res.oldest_event_id = e.id;
    // Older than the oldest message held, or seen before: a second copy.
    // (The dispatcher sends a target's events in event_id order, so the
    // first copy of an older event came before the oldest message held and
    // fell off the partition's tail.)
    if (e.id < res.oldest_event_id || !read.insert(e.id).second) {
      if (res.duplicates++ == 0 && require_once) {
        in_topic(" twice (exactly once for read_committed): ", key);
      }
      continue;
    }
    auto [last, fresh] = last_per_key.emplace(m.key, e.id);
    if (!fresh) {
      if (e.id <= last->second) {
        problem("key " + m.key + " out of order at " + key + " (event_id " + std::to_string(e.id) +
                " after " + std::to_string(last->second) + ")");
      }
      last->second = e.id;
    }
  }
  // An empty partition is checked from the target's first SENT event on
  // (lower_bound(-1)); a partition with messages but none of the target's
  // has its problems already.
  if (!got.empty() && res.oldest_event_id < 0) return res;
  const auto reconciled = ReconciledRanges(msgx_log, target);
  auto was_reconciled = [&](std::int64_t id) {
    for (const auto& [lo, hi] : reconciled) {
      if (id >= lo && id <= hi) return true;
    }
    return false;
  };
  int missing = 0;
  std::int64_t first_missing = -1;
  std::int64_t last_missing = -1;
  for (auto it = sent.lower_bound(res.oldest_event_id); it != sent.end(); ++it) {
    if (read.count(*it) != 0) continue;
    if (was_reconciled(*it)) {
      ++res.reconciled_missing;
      continue;
    }
    if (missing++ == 0) first_missing = *it;
    last_missing = *it;
  }
  if (got.empty()) {
    // The mock's quirk only if a reconcile marked every SENT event
    // delivered without a send: a whole transaction whose progress record
    // the mock showed and whose messages it never got
    // (docs/crash-safety.md#the-mock-clusters-duplicates).
    if (missing > 0) {
      const auto [low, high] = QueryWatermarks(bootstrap, topic);
      problem("nothing read back from " + topic + " (" + std::to_string(sent.size()) +
              " SENT events of " + target + ", " + std::to_string(missing) +
              " of them not marked by a reconcile; the broker's watermarks now: low " +
              std::to_string(low) + ", high " + std::to_string(high) + ")");
    }
    KeepLogOnFailure(topic, msgx_log, &res);
    return res;
  }
  if (require_once && res.duplicates > 1) {
    problem(std::to_string(res.duplicates) + " copies of events read before in " + topic);
  }
  if (missing > 0) {
    problem(std::to_string(missing) + " SENT events of " + target + " from event_id " +
            std::to_string(res.oldest_event_id) + " on are missing from " + topic +
            " (the first: event_id " + std::to_string(first_missing) +
            ", the last: " + std::to_string(last_missing) + ")");
    // What recorded them delivered: the ranges around them (a failure of
    // the crash loop deletes its databases, so this is all that is left).
    pqxx::connection c(own_url);
    pqxx::nontransaction nt(c);
    std::string ranges =
        "delivered ranges of " + target + " around them (first..last events sent_at):";
    for (const auto& row : nt.exec_params(
             "(SELECT first_event_id, last_event_id, events, sent_at::text FROM outbox_delivery "
             "WHERE target = $1 AND last_event_id < $2 ORDER BY last_event_id DESC LIMIT 2) "
             "UNION ALL (SELECT first_event_id, last_event_id, events, sent_at::text FROM "
             "outbox_delivery WHERE target = $1 AND last_event_id >= $2 ORDER BY last_event_id "
             "LIMIT 4) ORDER BY 2",
             target, first_missing)) {
      ranges += " " + row[0].as<std::string>() + ".." + row[1].as<std::string>() + " " +
                row[2].as<std::string>() + " " + row[3].as<std::string>() + ";";
    }
    problem(ranges);
    // Where the partition jumps over them: the messages read just before
    // and after the first missing event, with their offsets. Consecutive
    // offsets mean the broker never appended the missing ones; a gap means
    // the read skipped offsets it holds.
    std::string around = "read around event_id " + std::to_string(first_missing) + ":";
    auto id_at = [&](size_t i) -> std::int64_t {  // -1: not an event of the target
      auto h = got[i].headers.find("msgx-event-id");
      auto e = h == got[i].headers.end() ? events.end() : events.find(h->second);
      return e == events.end() ? -1 : e->second.id;
    };
    for (size_t i = 0; i + 1 < got.size(); ++i) {
      const std::int64_t id = id_at(i);
      const std::int64_t next = id_at(i + 1);
      if (id < 0 || id >= first_missing || next <= first_missing) continue;
      around += " event_id " + std::to_string(id) + " at offset " + std::to_string(got[i].offset) +
                ", then event_id " + std::to_string(next) + " at offset " +
                std::to_string(got[i + 1].offset) + ";";
    }
    problem(around);
    // The publisher logs a committed transaction whose messages the broker
    // acknowledged without appending (KafkaPublisher::unplaced_).
    int unplaced = 0;
    if (!msgx_log.empty()) {
      std::ifstream in(msgx_log);
      std::string line;
      while (std::getline(in, line)) {
        if (line.find("of a committed transaction without an offset") != std::string::npos ||
            line.find("a committed transaction of ") != std::string::npos) {
          ++unplaced;
          problem("msgx.log: " + line);
        }
      }
    }
    if (unplaced == 0) {
      problem(
          "msgx.log: no committed transaction with a message unacknowledged, failed or "
          "acknowledged without an offset");
    }
  }
  KeepLogOnFailure(topic, msgx_log, &res);
  return res;
}

}  // namespace msgx::testing
