#include "stream/mariadb/mariadb_errors.h"

namespace msgx {

std::string_view MariaDbErrorClass(unsigned int code) {
  switch (code) {
    case 2002:  // can't connect through socket
    case 2003:  // can't connect to server
    case 2005:  // unknown host
    case 2006:  // server has gone away
    case 2013:  // lost connection during query
    case 2026:  // TLS connection error
    case 2055:  // lost connection at reading initial packet
    case 1040:  // too many connections
    case 1053:  // server shutdown in progress
    case 1927:  // connection was killed
    case 4031:  // disconnected for inactivity
      return "connection";
    case 1205:  // lock wait timeout
    case 1213:  // deadlock
    case 3572:  // NOWAIT refused (MySQL 8)
      return "lock";
    case 1290:  // --read-only
    case 1792:  // read-only transaction
    case 1836:  // read-only mode
      return "read-only";
    case 1044:  // access denied to database
    case 1045:  // access denied for user
    case 1142:  // command denied on table
    case 1143:  // command denied on column
    case 1227:  // needs a privilege (PROCESS)
      return "privileges";
    case 1046:  // no database selected
    case 1049:  // unknown database
    case 1054:  // unknown column
    case 1146:  // table does not exist
      return "schema";
    case 1969:  // max_statement_time exceeded (MariaDB)
    case 3024:  // max_execution_time exceeded (MySQL)
      return "timeout";
    default:
      return "server";
  }
}

Status ClassifyMariaDbError(std::string_view what, unsigned int code, std::string_view message) {
  return Status::Infra("mailbox " + std::string(what) + ": " +
                       std::string(MariaDbErrorClass(code)) + " (" + std::to_string(code) +
                       "): " + std::string(message));
}

bool IsLockRefused(unsigned int code) { return code == 1205 || code == 3572; }

}  // namespace msgx
