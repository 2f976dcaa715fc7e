// BenchMailbox on a MariaDB/MySQL mailbox (libmariadb through
// MariaDbSession): see tools/bench_mailbox.h.
//
// The received and processed times are written as capture's test intake
// and the processed mark write them (MariaDbTimeColumn, each column's type
// learned on every connection): the instant for a TIMESTAMP column, the
// wall clock in mailbox.time-zone for a DATETIME one, to the microsecond
// (docs/capture.md#mailbox-time). The insert's RETURNING clause needs
// MariaDB 10.5 or later; MySQL has none, so there the insert fails with the
// server's syntax error (kInfra).
#include <algorithm>

#include "base/clock.h"
#include "base/mariadb_url.h"
#include "codecs/time_zone.h"
#include "stream/mariadb/mariadb_session.h"
#include "stream/mariadb/mariadb_time.h"
#include "tools/bench_mailbox.h"

namespace msgx::app {
namespace {

class MariaDbBenchMailbox final : public BenchMailbox {
 public:
  MariaDbBenchMailbox(MariaDbUrl url, const Config& config, const TimeZone& zone)
      : session_(std::move(url), MariaDbSession::Options{false, "+00:00"}),
        table_(MariaDbSession::QuoteName(config.mailbox_table)),
        col_(config.mailbox_columns),
        received_(config.mailbox_table, col_.received, zone),
        processed_(config.mailbox_table, col_.processed, zone) {
    session_.OnConnect([this](MariaDbSession& s) {
      Status learned = received_.Learn(s);
      return learned.ok() ? processed_.Learn(s) : learned;
    });
  }

  // Reaches the server and the table (the session connects lazily), so an
  // unreachable mailbox fails the bench before it starts, and learns the
  // time columns' types before the first statement that writes them.
  Status Probe() {
    return session_.Run("mailbox", "SELECT 1 FROM " + table_ + " LIMIT 1", nullptr);
  }

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
    const std::string now = At(received_);
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
                            At(processed_) + " WHERE " + Name(col_.id) + " = " + std::to_string(id),
                        nullptr);
  }

 private:
  static std::string Name(const std::string& column) { return MariaDbSession::QuoteName(column); }

  // Now, as `column` is written (docs/capture.md#mailbox-time).
  static std::string At(const MariaDbTimeColumn& column) {
    return "TIMESTAMPADD(MICROSECOND, " +
           std::to_string(column.FromUtc(SystemClock::Default()->NowMicros())) +
           ", '1970-01-01 00:00:00')";
  }

  MariaDbSession session_;
  const std::string table_;
  const MailboxColumns col_;
  MariaDbTimeColumn received_;
  MariaDbTimeColumn processed_;
};

}  // namespace

Result<std::unique_ptr<BenchMailbox>> OpenMariaDbBenchMailbox(const Config& config) {
  Result<MariaDbUrl> url = ParseMariaDbUrl(config.mailbox_url);
  if (!url.ok()) return url.status();
  Result<TimeZone> zone = TimeZone::Load(MailboxTimeZone(config));
  if (!zone.ok()) return zone.status();
  auto box = std::make_unique<MariaDbBenchMailbox>(std::move(url).value(), config, *zone);
  if (Status s = box->Probe(); !s.ok()) return s;
  return std::unique_ptr<BenchMailbox>(std::move(box));
}

}  // namespace msgx::app
