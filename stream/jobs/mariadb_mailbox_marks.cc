#include "stream/jobs/mariadb_mailbox_marks.h"

#include <map>
#include <optional>
#include <set>
#include <utility>

namespace msgx {

MariaDbMailboxMarks::MariaDbMailboxMarks(MariaDbUrl url, std::string table, MailboxColumns columns,
                                         TimeZone zone)
    : table_(std::move(table)),
      columns_(std::move(columns)),
      session_(std::move(url), MariaDbSession::Options{false, "+00:00"}),
      processed_(table_, columns_.processed, std::move(zone)) {
  session_.OnConnect([this](MariaDbSession& s) { return processed_.Learn(s); });
}

MariaDbMailboxMarks::~MariaDbMailboxMarks() = default;

Status MariaDbMailboxMarks::MarkFromNull(std::span<const MarkRequest> rows,
                                         const std::string& status,
                                         std::vector<MailboxMarkSeen>* out) {
  if (rows.empty()) return Status::Ok();
  const std::string t = MariaDbSession::QuoteName(table_);
  const std::string id = MariaDbSession::QuoteName(columns_.id);
  const std::string processed = MariaDbSession::QuoteName(columns_.processed);
  const std::string st = MariaDbSession::QuoteName(columns_.status);
  std::string all;
  for (const MarkRequest& r : rows) all += (all.empty() ? "" : ",") + std::to_string(r.id);

  Status s = session_.Run("mark", "START TRANSACTION", nullptr);
  if (!s.ok()) return s;
  auto fail = [this](Status why) {
    // Best effort: a lost connection rolls back on the server by itself.
    (void)session_.Run("mark", "ROLLBACK", nullptr);
    return why;
  };
  std::vector<MariaDbRow> found;
  s = session_.Run("mark",
                   "SELECT " + id + ", TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', " +
                       processed + "), " + st + " FROM " + t + " WHERE " + id + " IN (" + all +
                       ") FOR UPDATE",
                   &found);
  if (!s.ok()) return fail(s);
  struct Seen {
    bool null_mark = false;
    std::optional<MicrosSinceEpoch> processed;
    std::optional<std::string> status;
  };
  std::map<std::int64_t, Seen> seen;
  for (MariaDbRow& r : found) {
    auto rid = MariaDbInt(r.at(0));
    if (!rid) return fail(Status::Infra("mailbox mark: a row without an id"));
    Seen x;
    x.null_mark = !r.at(1).has_value();
    if (auto p = MariaDbInt(r[1])) x.processed = processed_.ToUtc(*p);
    x.status = std::move(r.at(2));
    seen[*rid] = std::move(x);
  }
  std::string cases;
  std::string nulls;
  std::uint64_t want = 0;
  std::set<std::int64_t> asked;
  for (const MarkRequest& r : rows) {
    auto it = seen.find(r.id);
    if (it == seen.end() || !it->second.null_mark || !asked.insert(r.id).second) continue;
    cases += " WHEN " + std::to_string(r.id) + " THEN TIMESTAMPADD(MICROSECOND, " +
             std::to_string(processed_.FromUtc(r.processed)) + ", '1970-01-01 00:00:00')";
    nulls += (nulls.empty() ? "" : ",") + std::to_string(r.id);
    ++want;
  }
  if (want > 0) {
    s = session_.Run("mark",
                     "UPDATE " + t + " SET " + processed + " = CASE " + id + cases + " END, " + st +
                         " = " + MariaDbSession::Quote(status) + " WHERE " + id + " IN (" + nulls +
                         ") AND " + processed + " IS NULL",
                     nullptr);
    if (!s.ok()) return fail(s);
    if (session_.affected_rows() != want) {
      return fail(Status::Infra("mailbox mark: " + std::to_string(session_.affected_rows()) +
                                " of " + std::to_string(want) +
                                " locked unmarked rows updated; rolled back"));
    }
  }
  s = session_.Run("mark", "COMMIT", nullptr);
  if (!s.ok()) return fail(s);
  for (const MarkRequest& r : rows) {
    MailboxMarkSeen m;
    m.id = r.id;
    auto it = seen.find(r.id);
    if (it == seen.end()) {
      m.kind = MailboxMarkSeen::Kind::kMissing;
    } else if (it->second.null_mark) {
      m.kind = MailboxMarkSeen::Kind::kWritten;
    } else {
      m.kind = MailboxMarkSeen::Kind::kFound;
      m.processed = it->second.processed;
      m.status = it->second.status;
    }
    out->push_back(std::move(m));
  }
  return Status::Ok();
}

}  // namespace msgx
