// BenchMailbox: what `msgx bench` does to the mailbox, as the upstream AODB
// (the writer's inserts) and as the one-message-at-a-time baseline (read a
// row, mark it processed) would (docs/performance.md#msgx-bench). The seam
// lets the bench drive either mailbox msgx captures from: PostgreSQL, or
// MariaDB/MySQL as in production (docs/operations.md#running-against-mariadbmysql).
//
// OpenBenchMailbox picks the implementation by mailbox.url's scheme, as
// MakeMailbox does for msgx itself; the table and column names are the
// configured ones. Every statement runs in its own transaction.
//
// Errors: kInfra for an unreachable server or a failed statement, kConfig
// for a mailbox.url or mailbox.time-zone that does not parse.
//
// Thread-safety: one thread drives one instance.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/result.h"
#include "tools/bench_traffic.h"

namespace msgx::app {

class BenchMailbox {
 public:
  virtual ~BenchMailbox() = default;

  // "PostgreSQL" or "MariaDB", for the report.
  virtual const char* kind() const = 0;
  // The largest SEQN in the mailbox (0 when empty).
  virtual Result<int> MaxSeqn() = 0;
  // Inserts `msgs` as VALID rows, received now, in ONE transaction (one
  // multi-row INSERT … RETURNING id). On success *ids holds their mailbox ids
  // in the order of `msgs` (ascending: one statement in one session).
  virtual Status Insert(const std::vector<TrafficMessage>& msgs,
                        std::vector<std::int64_t>* ids) = 0;
  // The message text of row `id`; nullopt when there is no such row.
  virtual Result<std::optional<std::string>> ReadMessage(std::int64_t id) = 0;
  // Sets row `id`'s processed column to now.
  virtual Status MarkProcessed(std::int64_t id) = 0;
};

Result<std::unique_ptr<BenchMailbox>> OpenBenchMailbox(const Config& config);

// The two implementations (tools/pg_bench_mailbox.cc,
// tools/mariadb_bench_mailbox.cc); OpenBenchMailbox chooses between them.
Result<std::unique_ptr<BenchMailbox>> OpenPgBenchMailbox(const Config& config);
Result<std::unique_ptr<BenchMailbox>> OpenMariaDbBenchMailbox(const Config& config);

// yyyyMMddHHmmss -> 'yyyy-MM-dd HH:mm:ss' (empty when malformed): SIS DTTM
// as the mailbox's date_sent column takes it.
std::string DttmAsSqlTimestamp(const std::string& dttm);

}  // namespace msgx::app
