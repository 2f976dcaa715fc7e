// PgSession: one PostgreSQL connection of msgx's own database, with the
// outage-or-bug rule (docs/crash-safety.md#outages,
// docs/crash-safety.md#bugs-stop-the-stage) applied at the adapter.
//
// Run() executes a function inside one transaction and commits it. Errors:
//   - connection lost or refused, server shutting down, serialisation or
//     deadlock, out of resources, a read-only database, a lock timeout, a
//     refused login (PgSqlStateClass): kInfra (an outage: retry, charge
//     nothing); the connection is dropped and re-opened on the next Run();
//   - SQLSTATE class 22 (data) or 23 (constraint): kInternal. The fold
//     bounds everything it writes, so this is a bug: stop with an alarm, do
//     not retry as an outage;
//   - any other SQL error: kInternal.
//
// Thread-safety: not thread-safe; one session per thread.
#pragma once

#include <functional>
#include <memory>
#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"

namespace msgx {

class PgSession {
 public:
  explicit PgSession(std::string url);
  ~PgSession();
  PgSession(const PgSession&) = delete;
  PgSession& operator=(const PgSession&) = delete;

  // Runs `fn` in one transaction (READ COMMITTED) and commits.
  Status Run(const std::function<void(pqxx::dbtransaction&)>& fn);

  // Runs `fn` outside a transaction block: each statement is a transaction
  // of its own, one round trip where Run adds BEGIN and COMMIT. For a read
  // of one statement (FencedReadSql).
  Status RunStatement(const std::function<void(pqxx::transaction_base&)>& fn);

  const std::string& url() const { return url_; }

 private:
  // Runs `fn` on the connection, opened first if it is not; an exception
  // becomes a Status (PgErrorStatus), and an outage drops the connection so
  // the next call opens a new one.
  Status OnConnection(const std::function<void(pqxx::connection&)>& fn);

  std::string url_;
  std::unique_ptr<pqxx::connection> conn_;
};

// "{1,2,3}": a PostgreSQL array literal of integers, for `$n::bigint[]`.
template <typename Ints>
std::string PgArrayLiteral(const Ints& values) {
  std::string s = "{";
  bool first = true;
  for (const auto& v : values) {
    if (!first) s += ',';
    first = false;
    s += std::to_string(v);
  }
  return s + "}";
}

// 'text' with every ' doubled: a string literal to put into SQL text
// (standard_conforming_strings, PostgreSQL's default since 9.1, so a
// backslash is itself). For values fixed by code or settings that must be
// in the text itself (stream/pg/prepared.h), never for data.
std::string PgTextLiteral(std::string_view s);

// "2026-11-30 02:48:34.123456+00": a TIMESTAMPTZ literal for a UTC instant.
std::string PgTimestamp(MicrosSinceEpoch micros);

// The class of a SQLSTATE (docs/operations.md#error-classes): kInfra for
// classes 08, 40, 53, 57, 58 and for 25006, 55P03, 55006, 57014, 28000,
// 28P01, 53300; kInternal for everything else (22 and 23 among them).
ErrorClass PgSqlStateClass(std::string_view state);

// Classifies an exception thrown by libpqxx as above.
Status PgErrorStatus(const std::exception& e, const std::string& what);

}  // namespace msgx
