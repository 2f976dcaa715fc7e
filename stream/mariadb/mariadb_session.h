// MariaDbSession: one connection to a MariaDB or MySQL server through the
// libmariadb C API (MariaDB Connector/C), for the mailbox's adapters.
//
// Opened lazily by the first call and re-opened by the next call after a
// failure, so an outage costs one kInfra Status per call until the server is
// back. Every failure is classified by ClassifyMariaDbError (kInfra).
//
// Each connection is set up explicitly, whatever the server's defaults:
//   - character set utf8mb4 (SET NAMES utf8mb4 COLLATE utf8mb4_bin): text
//     arrives as UTF-8 whatever the column's charset, converted by the
//     server (docs/operations.md#running-against-mariadbmysql);
//   - time_zone = the session zone given (e.g. '+00:00'); TIMESTAMP values
//     are converted to it, DATETIME values are not (they have no zone);
//   - READ COMMITTED: every statement sees what committed before it began,
//     and a locking read takes no gap locks; autocommit, so no transaction
//     and no lock outlives its statement;
//   - read_only sessions (capture): SET SESSION TRANSACTION READ ONLY;
//   - statements longer than 30 s are ended by the server (max_statement_time
//     on MariaDB, max_execution_time on MySQL) and the client's read and
//     write timeouts are 60 s: a hung server is an outage, not a stall.
//
// Values come back as text (the text protocol) with their exact lengths,
// so message bytes are never trimmed at a NUL.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mariadb_url.h"
#include "base/result.h"

struct st_mysql;

namespace msgx {

using MariaDbRow = std::vector<std::optional<std::string>>;

// A column's text as a whole decimal integer; nullopt for NULL or anything
// else.
std::optional<std::int64_t> MariaDbInt(const std::optional<std::string>& v);

class MariaDbSession {
 public:
  struct Options {
    bool read_only = true;
    std::string time_zone = "+00:00";  // SET time_zone = '…'
  };
  MariaDbSession(MariaDbUrl url, Options options);
  ~MariaDbSession();
  MariaDbSession(const MariaDbSession&) = delete;
  MariaDbSession& operator=(const MariaDbSession&) = delete;

  // Runs one statement; rows of a result set are appended to *rows (may be
  // null for statements without one). `what` names the call in errors.
  // On a server error the error code is stored in *code when given, and the
  // connection is kept unless the error lost it.
  Status Run(std::string_view what, const std::string& sql, std::vector<MariaDbRow>* rows,
             unsigned int* code = nullptr);

  // Rows changed by the last statement Run() executed.
  std::uint64_t affected_rows() const { return affected_; }

  // Runs `fn` once, right after each new connection is set up (e.g. to learn
  // the account's privileges); its failure drops the connection.
  void OnConnect(std::function<Status(MariaDbSession&)> fn) { on_connect_ = std::move(fn); }

  // `a`.`b` for "a.b" (each part quoted, backticks doubled).
  static std::string QuoteName(std::string_view name);
  // A string literal '…' escaped for this connection's charset (utf8mb4;
  // NO_BACKSLASH_ESCAPES is not assumed either way: both ' and \ escaped).
  static std::string Quote(std::string_view text);

  bool connected() const { return conn_ != nullptr; }
  bool is_mariadb() const { return is_mariadb_; }

 private:
  Status Connect();
  void Drop();

  const MariaDbUrl url_;
  const Options options_;
  st_mysql* conn_ = nullptr;
  bool is_mariadb_ = true;
  bool in_connect_ = false;
  std::uint64_t affected_ = 0;
  std::function<Status(MariaDbSession&)> on_connect_;
};

}  // namespace msgx
