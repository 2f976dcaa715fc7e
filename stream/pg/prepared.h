// Prepared statements of msgx's own database
// (docs/performance.md#prepared-statements).
//
// PostgreSQL plans a statement every time it arrives as text. For the
// statements on the hot path the plan cost more than the run: a
// dispatcher's head read took 0.3-1 ms to plan and 0.05-0.2 ms to execute.
// ExecPrepared sends `sql` as a prepared statement of the transaction's
// connection instead, named after its text: the first call on a connection
// prepares it, later calls execute it by name, and after five runs
// PostgreSQL keeps a generic plan when that plan costs no more than the
// ones it made for the values, so it stops planning.
//
// Rules for the SQL passed here:
//   - its text comes from a small fixed set (built from constants and
//     settings, never from data): the server keeps each distinct text as a
//     statement for the connection's life;
//   - a value that decides which partial index serves the query (a
//     dispatcher's target) is a literal in the text, not a parameter: a
//     generic plan cannot use an index whose predicate a parameter decides
//     (Dispatcher::HeadQuery).
// A connection that is dropped (PgSession, after an outage) takes its
// statements with it; the next one prepares them again on first use. Two
// texts with the same name (a 64-bit hash collision) fail loudly as
// libpqxx's "Inconsistent redefinition", never run the wrong statement.
//
// A connection pooler must give each connection a session of its own, as
// leadership's advisory lock already needs (docs/operations.md#postgresql-connections).
//
// Thread-safety: as the transaction it is given.
#pragma once

#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <utility>

namespace msgx {

// "msgx_" and 16 hex digits of a 64-bit FNV-1a hash of `sql`.
std::string PreparedName(std::string_view sql);

// tx.exec_params(sql, args...), as a prepared statement (above).
template <typename... Args>
pqxx::result ExecPrepared(pqxx::transaction_base& tx, const std::string& sql, Args&&... args) {
  const std::string name = PreparedName(sql);
  tx.conn().prepare(name, sql);  // a no-op once the connection knows it
  return tx.exec_prepared(name, std::forward<Args>(args)...);
}

}  // namespace msgx
