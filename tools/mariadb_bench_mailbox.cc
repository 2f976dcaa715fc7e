// BenchMailbox on a MariaDB/MySQL mailbox (libmariadb through
// MariaDbSession): see tools/bench_mailbox.h.
//
// Times are written as the mailbox's DATETIME columns hold them: the wall
// clock in mailbox.time-zone, to the microsecond, as `msgx dev load` does
// (docs/operations.md#running-against-mariadbmysql). The insert's RETURNING
// clause needs MariaDB 10.5 or later; MySQL has none, so there the insert
// fails with the server's syntax error (kInfra).
#include <algorithm>
#include <cstdio>

#include "base/clock.h"
#include "base/mariadb_url.h"
#include "codecs/time_zone.h"
#include "stream/mariadb/mariadb_session.h"
#include "tools/bench_mailbox.h"
#include "tools/corpus_loader.h"

namespace msgx::app {
namespace {

class MariaDbBenchMailbox final : public BenchMailbox {
 public:
  MariaDbBenchMailbox(MariaDbUrl url, const Config& config, TimeZone zone)
      : session_(std::move(url), MariaDbSession::Options{false, "+00:00"}),
        zone_(std::move(zone)),
        table_(MariaDbSession::QuoteName(config.mailbox_table)),
        col_(config.mailbox_columns) {}

  const char* kind() const override { return "MariaDB"; }

  Result<int> MaxSeqn() override {
    std::vector<MariaDbRow> rows;
    if (Status s = session_.Run(
            "mailbox", "SELECT COALESCE(MAX(cminmsgs_subsystem_sequence), 0) FROM " + table_,
            &rows);
        !s.ok()) {
      return s;
    }
    const std::optional<std::int64_t> max = rows.empty() ? std::nullopt : MariaDbInt(rows[0].at(0));
    if (!max) return Status::Infra("mailbox: no highest SEQN");
    return static_cast<int>(*max);
  }

  Status Insert(const std::vector<TrafficMessage>& msgs, std::vector<std::int64_t>* ids) override {
    ids->clear();
    if (msgs.empty()) return Status::Ok();
    const std::string now = MariaDbSession::Quote(Now());
    std::string sql = "INSERT INTO " + table_ + " (" + Name(col_.message) + ", " +
                      Name(col_.received) +
                      ", cminmsgs_subsystem_name, cminmsgs_subsystem_sequence,"
                      " cminmsgs_subsystem_date_sent, cminmsgs_subsystem_subtype,"
                      " cminmsgs_subsystem_type, " +
                      Name(col_.status) + ") VALUES ";
    for (std::size_t i = 0; i < msgs.size(); ++i) {
      const TrafficMessage& m = msgs[i];
      const std::string sent = DttmAsSqlTimestamp(m.dttm);
      if (i > 0) sql += ',';
      sql += "(" + MariaDbSession::Quote(m.xml) + ", " + now + ", " +
             MariaDbSession::Quote(m.sndr) + ", " + std::to_string(m.seqn) + ", " +
             (sent.empty() ? std::string("NULL") : MariaDbSession::Quote(sent)) + ", " +
             MariaDbSession::Quote(m.styp) + ", " + MariaDbSession::Quote(m.type) + ", 'VALID')";
    }
    // Autocommit: the statement is its own transaction.
    std::vector<MariaDbRow> rows;
    if (Status s = session_.Run("mailbox insert", sql + " RETURNING " + Name(col_.id), &rows);
        !s.ok()) {
      return s;
    }
    for (const MariaDbRow& row : rows) {
      const std::optional<std::int64_t> id = row.empty() ? std::nullopt : MariaDbInt(row[0]);
      if (!id) return Status::Infra("mailbox insert: RETURNING gave no id");
      ids->push_back(*id);
    }
    std::sort(ids->begin(), ids->end());
    return Status::Ok();
  }

  Result<std::optional<std::string>> ReadMessage(std::int64_t id) override {
    std::vector<MariaDbRow> rows;
    if (Status s = session_.Run("mailbox read",
                                "SELECT " + Name(col_.message) + " FROM " + table_ + " WHERE " +
                                    Name(col_.id) + " = " + std::to_string(id),
                                &rows);
        !s.ok()) {
      return s;
    }
    if (rows.empty() || rows[0].empty() || !rows[0][0]) return std::optional<std::string>();
    return rows[0][0];
  }

  Status MarkProcessed(std::int64_t id) override {
    return session_.Run("mailbox mark",
                        "UPDATE " + table_ + " SET " + Name(col_.processed) + " = " +
                            MariaDbSession::Quote(Now()) + " WHERE " + Name(col_.id) + " = " +
                            std::to_string(id),
                        nullptr);
  }

 private:
  static std::string Name(const std::string& column) { return MariaDbSession::QuoteName(column); }

  // 'yyyy-MM-dd HH:mm:ss.ffffff' in mailbox.time-zone.
  std::string Now() const {
    const MicrosSinceEpoch t = SystemClock::Default()->NowMicros();
    const LocalTime l = AirportLocalTime(t, zone_);
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%04d-%02d-%02d %02d:%02d:%02d.%06lld", l.year, l.month, l.day,
                  l.hour, l.minute, l.second, static_cast<long long>(t % 1000000));
    return buf;
  }

  MariaDbSession session_;
  const TimeZone zone_;
  const std::string table_;
  const MailboxColumns col_;
};

}  // namespace

Result<std::unique_ptr<BenchMailbox>> OpenMariaDbBenchMailbox(const Config& config) {
  Result<MariaDbUrl> url = ParseMariaDbUrl(config.mailbox_url);
  if (!url.ok()) return url.status();
  Result<TimeZone> zone = TimeZone::Load(MailboxTimeZone(config));
  if (!zone.ok()) return zone.status();
  auto box = std::make_unique<MariaDbBenchMailbox>(std::move(url).value(), config,
                                                   std::move(zone).value());
  // The session connects lazily; reach the server now, as the PostgreSQL
  // side does, so an unreachable mailbox fails the bench before it starts.
  if (Result<int> seqn = box->MaxSeqn(); !seqn.ok()) return seqn.status();
  return std::unique_ptr<BenchMailbox>(std::move(box));
}

}  // namespace msgx::app
