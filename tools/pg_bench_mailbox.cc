// BenchMailbox on a PostgreSQL mailbox (libpqxx): see tools/bench_mailbox.h.
// The received and processed times are written as capture's test intake
// writes them: the wall clock in mailbox.time-zone (the mailbox's columns
// are TIMESTAMP, without a zone).
#include <algorithm>
#include <pqxx/pqxx>

#include "tools/bench_mailbox.h"

namespace msgx::app {
namespace {

class PgBenchMailbox final : public BenchMailbox {
 public:
  explicit PgBenchMailbox(const Config& config)
      : conn_(config.mailbox_url),
        table_(config.mailbox_table),
        col_(config.mailbox_columns),
        now_("(now() AT TIME ZONE " + conn_.quote(MailboxTimeZone(config)) + ")") {}

  const char* kind() const override { return "PostgreSQL"; }

  Result<int> MaxSeqn() override {
    try {
      pqxx::nontransaction nt(conn_);
      return nt.exec1("SELECT COALESCE(MAX(cminmsgs_subsystem_sequence), 0) FROM " + table_)[0]
          .as<int>();
    } catch (const std::exception& e) {
      return Failed("mailbox", e);
    }
  }

  Status Insert(const std::vector<TrafficMessage>& msgs, std::vector<std::int64_t>* ids) override {
    ids->clear();
    if (msgs.empty()) return Status::Ok();
    try {
      pqxx::work tx(conn_);
      std::string sql = "INSERT INTO " + table_ + " (" + col_.message + ", " + col_.received +
                        ", cminmsgs_subsystem_name, cminmsgs_subsystem_sequence,"
                        " cminmsgs_subsystem_date_sent, cminmsgs_subsystem_subtype,"
                        " cminmsgs_subsystem_type, " +
                        col_.status + ") VALUES ";
      for (std::size_t i = 0; i < msgs.size(); ++i) {
        const TrafficMessage& m = msgs[i];
        if (i > 0) sql += ',';
        sql += "(" + tx.quote(m.xml) + ", " + now_ + ", " + tx.quote(m.sndr) + ", " +
               std::to_string(m.seqn) + ", " + tx.quote(DttmAsSqlTimestamp(m.dttm)) + ", " +
               tx.quote(m.styp) + ", " + tx.quote(m.type) + ", 'VALID')";
      }
      pqxx::result r = tx.exec(sql + " RETURNING " + col_.id);
      tx.commit();
      for (const auto& row : r) ids->push_back(row[0].as<std::int64_t>());
      std::sort(ids->begin(), ids->end());
      return Status::Ok();
    } catch (const std::exception& e) {
      ids->clear();
      return Failed("mailbox insert", e);
    }
  }

  Result<std::optional<std::string>> ReadMessage(std::int64_t id) override {
    try {
      Prepare();
      pqxx::nontransaction nt(conn_);
      pqxx::result r = nt.exec_prepared("bench_read", id);
      if (r.empty()) return std::optional<std::string>();
      return std::optional<std::string>(r[0][0].as<std::string>());
    } catch (const std::exception& e) {
      return Failed("mailbox read", e);
    }
  }

  Status MarkProcessed(std::int64_t id) override {
    try {
      Prepare();
      pqxx::work tx(conn_);
      tx.exec_prepared0("bench_mark", id);
      tx.commit();
      return Status::Ok();
    } catch (const std::exception& e) {
      return Failed("mailbox mark", e);
    }
  }

 private:
  static Status Failed(const std::string& what, const std::exception& e) {
    const bool lost = dynamic_cast<const pqxx::broken_connection*>(&e) != nullptr;
    return Status::Infra(what + (lost ? " (unreachable): " : ": ") + e.what());
  }

  void Prepare() {
    if (prepared_) return;
    conn_.prepare("bench_read",
                  "SELECT " + col_.message + " FROM " + table_ + " WHERE " + col_.id + " = $1");
    conn_.prepare("bench_mark", "UPDATE " + table_ + " SET " + col_.processed + " = " + now_ +
                                    " WHERE " + col_.id + " = $1");
    prepared_ = true;
  }

  pqxx::connection conn_;
  const std::string table_;
  const MailboxColumns col_;
  // Now as the mailbox's TIMESTAMP columns hold it: the wall clock in
  // mailbox.time-zone, as capture reads them (docs/capture.md#mailbox-time).
  const std::string now_;
  bool prepared_ = false;
};

}  // namespace

Result<std::unique_ptr<BenchMailbox>> OpenPgBenchMailbox(const Config& config) {
  try {
    return std::unique_ptr<BenchMailbox>(std::make_unique<PgBenchMailbox>(config));
  } catch (const std::exception& e) {
    return Status::Infra(std::string("mailbox unreachable: ") + e.what());
  }
}

}  // namespace msgx::app
