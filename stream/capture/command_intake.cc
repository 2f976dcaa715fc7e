#include "stream/capture/command_intake.h"

#include <simdjson.h>

#include <exception>
#include <pqxx/pqxx>
#include <vector>

#include "base/failpoint.h"
#include "base/log.h"
#include "stream/pg/pg_session.h"

namespace msgx {
namespace {

struct Row {
  std::int64_t id = 0;
  std::string kind;
  std::string args;
  std::string issued_by;
  MicrosSinceEpoch issued_at = 0;
};

}  // namespace

Result<CommandArgs> ParseCommandArgs(const std::string& kind, const std::string& args_json) {
  if (kind == "QUARANTINE") {
    return Status::Unsupported(
        "QUARANTINE is not an operator command: a record is quarantined only by the crash-poison "
        "step at start-up, after it crashed the processor twice, for an offset not yet folded "
        "(docs/crash-safety.md#crash-poison)");
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string(args_json)).get(doc) != simdjson::SUCCESS ||
      !doc.is_object()) {
    return Status::Malformed("args is not a JSON object");
  }
  auto int_field = [&](const char* name) -> Result<std::int64_t> {
    std::int64_t v = 0;
    if (doc[name].get_int64().get(v) != simdjson::SUCCESS) {
      return Status::Malformed(std::string("args.") + name + " must be an integer");
    }
    return v;
  };
  if (kind == "REPLAY_MSG" || kind == "REPLAY") {
    simdjson::dom::array ids;
    if (doc["mailbox_ids"].get_array().get(ids) != simdjson::SUCCESS) {
      return Status::Malformed("args.mailbox_ids must be an array");
    }
    ReplayArgs a;
    for (simdjson::dom::element e : ids) {
      std::int64_t id = 0;
      if (e.get_int64().get(id) != simdjson::SUCCESS || id <= 0) {
        return Status::Malformed("args.mailbox_ids must hold positive integers");
      }
      a.mailbox_ids.push_back(id);
    }
    if (a.mailbox_ids.empty()) return Status::Malformed("args.mailbox_ids is empty");
    return CommandArgs(std::move(a));
  }
  if (kind == "HISTORY_SWEEP") {
    auto v = int_field("cutoff_micros");
    if (!v.ok()) return v.status();
    return CommandArgs(HistorySweepArgs{*v});
  }
  if (kind == "IDENTITY_EXPIRY") {
    auto v = int_field("before_micros");
    if (!v.ok()) return v.status();
    return CommandArgs(IdentityExpiryArgs{*v});
  }
  return Status::Malformed("unknown command kind '" + kind + "'");
}

CommandIntake::CommandIntake(std::string url, LogStore* log, int batch_max, std::string table)
    : url_(std::move(url)), log_(log), batch_max_(batch_max), table_(std::move(table)) {}

CommandIntake::~CommandIntake() = default;

Result<IntakeOutcome> CommandIntake::Poll() {
  IntakeOutcome out;
  std::vector<Row> rows;
  try {
    if (!conn_ || !conn_->is_open()) {
      conn_ = std::make_unique<pqxx::connection>(url_);
      conn_->set_client_encoding("UTF8");
      pqxx::nontransaction setup(*conn_);
      setup.exec("SET statement_timeout = '30s'");
    }
    pqxx::nontransaction tx(*conn_);
    std::string kinds;
    for (const char* k : kLogCommandKinds) {
      kinds += kinds.empty() ? "" : ", ";
      kinds += conn_->quote(k);
    }
    pqxx::result r = tx.exec_params(
        "SELECT command_id, kind, args_json, requested_by, "
        "(EXTRACT(EPOCH FROM created_at) * 1000000)::bigint FROM " +
            conn_->quote_name(table_) + " WHERE state = 'PENDING' AND kind IN (" + kinds +
            ") ORDER BY command_id LIMIT $1",
        batch_max_);
    for (const auto& row : r) {
      Row c;
      c.id = row[0].as<std::int64_t>();
      c.kind = row[1].is_null() ? "" : row[1].as<std::string>();
      c.args = row[2].is_null() ? "{}" : row[2].as<std::string>();
      c.issued_by = row[3].is_null() ? "" : row[3].as<std::string>();
      c.issued_at = row[4].is_null() ? 0 : row[4].as<std::int64_t>();
      rows.push_back(std::move(c));
    }
  } catch (const std::exception& e) {
    conn_.reset();
    return Status::Infra(std::string("msgx_command read: ") + e.what());
  }
  if (rows.empty()) return out;
  out.more = static_cast<int>(rows.size()) >= batch_max_;

  std::vector<std::int64_t> mark_ids, mark_offsets, reject_ids;
  std::vector<std::string> reject_reasons;
  std::vector<LogRecordData> records;
  std::vector<std::int64_t> record_ids;
  for (const Row& row : rows) {
    auto existing = log_->CommandOffset(row.id);
    if (!existing.ok()) return existing.status();
    if (*existing) {
      mark_ids.push_back(row.id);
      mark_offsets.push_back(static_cast<std::int64_t>(**existing));
      ++out.recovered;
      continue;
    }
    auto args = ParseCommandArgs(row.kind, row.args);
    if (!args.ok()) {
      Logger("intake")->warn("msgx_command {} rejected: {}", row.id, args.status().message());
      reject_ids.push_back(row.id);
      reject_reasons.push_back(args.status().message());
      ++out.rejected;
      continue;
    }
    records.push_back(LogRecordData::Command(
        CommandData{std::move(args).value(), row.issued_by, row.id, row.issued_at}));
    record_ids.push_back(row.id);
  }

  if (!records.empty()) {
    auto first = log_->AppendCommands(records);
    if (!first.ok()) return first.status();
    for (std::size_t i = 0; i < records.size(); ++i) {
      mark_ids.push_back(record_ids[i]);
      mark_offsets.push_back(static_cast<std::int64_t>(*first + i));
      Logger("intake")->info("msgx_command {} appended at offset {}", record_ids[i], *first + i);
    }
    out.appended = static_cast<int>(records.size());
  }

  // A crash here leaves the commands in the log but unmarked (docs/capture.md).
  if (!mark_ids.empty()) MSGX_FAILPOINT("intake.after-append", std::to_string(mark_ids.back()));
  try {
    pqxx::work tx(*conn_);
    const std::string table = conn_->quote_name(table_);
    if (!mark_ids.empty()) {
      tx.exec_params("UPDATE " + table +
                         " AS c SET state = 'APPENDED', log_offset = v.off, appended_at = now() "
                         "FROM unnest($1::bigint[], $2::bigint[]) AS v(id, off) "
                         "WHERE c.command_id = v.id AND c.state = 'PENDING'",
                     PgArrayLiteral(mark_ids), PgArrayLiteral(mark_offsets));
    }
    for (std::size_t i = 0; i < reject_ids.size(); ++i) {
      tx.exec_params("UPDATE " + table +
                         " SET state = 'REJECTED', error = $2 "
                         "WHERE command_id = $1 AND state = 'PENDING'",
                     reject_ids[i], reject_reasons[i]);
    }
    tx.commit();
  } catch (const std::exception& e) {
    conn_.reset();
    // The records are in the log and indexed; the next Poll() marks them.
    return Status::Infra(std::string("msgx_command mark: ") + e.what());
  }
  return out;
}

}  // namespace msgx
