#include "tools/bench_writer.h"

#include <algorithm>
#include <pqxx/pqxx>
#include <thread>

#include "base/clock.h"

namespace msgx::app {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr auto kSlot = std::chrono::milliseconds(5);  // how often `between` runs while waiting

std::string SqlTimestamp(const std::string& dttm) {  // yyyyMMddHHmmss
  if (dttm.size() != 14) return "";
  return dttm.substr(0, 4) + "-" + dttm.substr(4, 2) + "-" + dttm.substr(6, 2) + " " +
         dttm.substr(8, 2) + ":" + dttm.substr(10, 2) + ":" + dttm.substr(12, 2);
}

}  // namespace

struct MailboxWriter::Session {
  pqxx::connection conn;
};

MailboxWriter::~MailboxWriter() = default;

Result<std::unique_ptr<MailboxWriter>> MailboxWriter::Open(const Config& config) {
  std::unique_ptr<MailboxWriter> w(new MailboxWriter());
  w->table_ = config.mailbox_table;
  w->columns_ = config.mailbox_columns;
  try {
    w->session_.reset(new Session{pqxx::connection(config.mailbox_url)});
  } catch (const std::exception& e) {
    return Status::Infra(std::string("mailbox unreachable: ") + e.what());
  }
  return w;
}

Result<int> MailboxWriter::MaxSeqn() {
  try {
    pqxx::nontransaction nt(session_->conn);
    return nt.exec1("SELECT COALESCE(MAX(cminmsgs_subsystem_sequence), 0) FROM " + table_)[0]
        .as<int>();
  } catch (const std::exception& e) {
    return Status::Infra(std::string("mailbox: ") + e.what());
  }
}

Status MailboxWriter::Insert(const std::vector<TrafficMessage>& msgs, const OnCommit& on_commit) {
  if (msgs.empty()) return Status::Ok();
  try {
    pqxx::work tx(session_->conn);
    std::string sql = "INSERT INTO " + table_ + " (" + columns_.message + ", " + columns_.received +
                      ", cminmsgs_subsystem_name, cminmsgs_subsystem_sequence,"
                      " cminmsgs_subsystem_date_sent, cminmsgs_subsystem_subtype,"
                      " cminmsgs_subsystem_type, " +
                      columns_.status + ") VALUES ";
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      const TrafficMessage& m = msgs[i];
      if (i > 0) sql += ',';
      sql += "(" + tx.quote(m.xml) + ", now(), " + tx.quote(m.sndr) + ", " +
             std::to_string(m.seqn) + ", " + tx.quote(SqlTimestamp(m.dttm)) + ", " +
             tx.quote(m.styp) + ", " + tx.quote(m.type) + ", 'VALID')";
    }
    pqxx::result r = tx.exec(sql + " RETURNING " + columns_.id);
    tx.commit();
    const auto at = SteadyClock::now();
    // One statement in one session: ids follow the VALUES order.
    std::vector<std::int64_t> ids;
    ids.reserve(r.size());
    for (const auto& row : r) ids.push_back(row[0].as<std::int64_t>());
    std::sort(ids.begin(), ids.end());
    for (std::size_t i = 0; i < ids.size() && i < msgs.size(); ++i) {
      on_commit(ids[i], msgs[i].kind, at);
    }
    return Status::Ok();
  } catch (const pqxx::broken_connection& e) {
    return Status::Infra(std::string("mailbox unreachable: ") + e.what());
  } catch (const std::exception& e) {
    return Status::Infra(std::string("mailbox insert: ") + e.what());
  }
}

Status MailboxWriter::WriteNow(const std::vector<TrafficMessage>& msgs, const OnCommit& on_commit) {
  return Insert(msgs, on_commit);
}

Result<WriteStats> MailboxWriter::WriteAt(double rate, std::chrono::duration<double> duration,
                                          TrafficGenerator& gen, const TimeZone& zone,
                                          const OnCommit& on_commit,
                                          const std::function<void()>& between) {
  WriteStats stats;
  const auto total = static_cast<std::int64_t>(rate * duration.count());
  const std::int64_t per_tx = std::max<std::int64_t>(1, static_cast<std::int64_t>(rate / 50));
  const std::chrono::duration<double> period(static_cast<double>(per_tx) / rate);
  const auto start = SteadyClock::now();
  auto last_commit = start;
  std::vector<TrafficMessage> batch;
  for (std::int64_t k = 0; stats.rows < total; ++k) {
    const auto slot =
        start + std::chrono::duration_cast<SteadyClock::duration>(period * static_cast<double>(k));
    while (SteadyClock::now() < slot) {
      between();
      std::this_thread::sleep_until(std::min(slot, SteadyClock::now() + kSlot));
    }
    const LocalTime now = AirportLocalTime(SystemClock::Default()->NowMicros(), zone);
    batch.clear();
    const std::int64_t n = std::min(per_tx, total - stats.rows);
    for (std::int64_t i = 0; i < n; ++i) batch.push_back(gen.Next(now));
    Status s = Insert(batch, [&](std::int64_t id, TrafficKind kind, SteadyClock::time_point at) {
      last_commit = at;
      on_commit(id, kind, at);
    });
    if (!s.ok()) return s;
    stats.rows += n;
    ++stats.transactions;
    if (k % 8 == 0) between();
  }
  stats.seconds = std::chrono::duration<double>(last_commit - start).count();
  return stats;
}

}  // namespace msgx::app
