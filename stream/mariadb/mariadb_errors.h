// The MariaDB/MySQL mailbox's error classes, in one place
// (docs/operations.md#error-classes).
//
// Every failure the client library reports becomes a kInfra Status: an
// outage that the stage waits out, never charged to a message. The message
// names the class an operator acts on:
//   connection   2002/2003/2005/2006/2013/2026/2055, 1040, 1053, 1927, 4031,
//                server gone away or lost mid-query, TLS handshake;
//   lock         1205 lock wait timeout, 1213 deadlock, 3572 NOWAIT refused;
//   read-only    1290 (--read-only), 1792 (READ ONLY transaction), 1836;
//   privileges   1044/1045/1142/1143/1227 (the mailbox account's grants,
//                docs/operations.md#the-mailbox-account);
//   schema       1046/1049/1054/1146 (mailbox.table or a column is wrong);
//   timeout      1969/3024 (max_statement_time reached);
//   server       anything else.
// IsLockRefused tells the gap probe's "an uncommitted insert holds the row"
// (1205 from a NOWAIT locking read on MariaDB, 3572 on MySQL 8) apart.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace msgx {

// The class name above, e.g. "connection", "read-only".
std::string_view MariaDbErrorClass(unsigned int code);

// kInfra "mailbox <what>: <class> (<code>): <message>".
Status ClassifyMariaDbError(std::string_view what, unsigned int code, std::string_view message);

bool IsLockRefused(unsigned int code);

}  // namespace msgx
