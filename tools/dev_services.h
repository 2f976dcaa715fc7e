// DevServices: the local PostgreSQL, Redis and Kafka-protocol broker behind
// `msgx dev up|down|env` (docs/operations.md#local-services-msgx-dev), for
// trying msgx out on one machine.
//
// Everything lives in one directory (dev.dir, default ./var/dev):
//   pg/                PostgreSQL data directory (initdb; owned by `postgres`
//                      when we run as root, since PostgreSQL refuses root)
//   pg.log pg.port pg.pid
//   redis/ redis.log redis.port redis.pid
//   kafka.log kafka.pid kafka.bootstrap   (`msgx dev kafka`, detached)
//   state/             suggested state.dir (MSGX_STATE_DIR)
//   mariadb/           with --mailbox mariadb: data/ (mariadb-install-db),
//                      mysqld.sock, mariadb.log; owned by `mysql` when root
//   mariadb.port mariadb.pid
//   mailbox            which mailbox `env` names: postgresql or mariadb
//
// Up():
//   - PostgreSQL: initdb once, then `pg_ctl start -w` on 127.0.0.1 (TCP
//     only, no unix socket) on the requested, the previously used, or a free
//     port; creates the own database `msgx` and the mailbox database `aodb`
//     with `cminmsgs` in the mailbox's shape
//     (docs/capture.md#the-mailbox-is-not-ours). The mailbox table is a
//     fixture standing in for the other team's database; msgx itself never
//     runs DDL there.
//   - redis-server without persistence, detached (setsid).
//   - `msgx dev kafka` detached: librdkafka's mock cluster with the three
//     topics; its bootstrap address lands in kafka.bootstrap.
//   - with mailbox = "mariadb": Debian's mariadbd on a throwaway datadir
//     (mariadb-install-db once) on 127.0.0.1 and a free port, detached;
//     database `aodb` with `cminmsgs` in the MariaDB shape
//     (kLocalMariaDbMailboxDdl) and the least-privilege account
//     msgx:msgx (SELECT, INSERT, UPDATE of the two mark columns:
//     docs/operations.md#running-against-mariadbmysql). PostgreSQL still
//     runs: it holds msgx's own database.
//   Idempotent: a service found running is reported and left alone.
// Down(): stops exactly what Up() started, by the recorded pids (checked
//   against the program's command line, so a recycled pid is never
//   signalled), pg_ctl stop for PostgreSQL. Data stays unless `purge`.
// EnvExports(): `export NAME='value'` lines for eval.
//
// Thread-safety: not thread-safe; one command drives one instance.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"

namespace msgx::app {

struct DevOptions {
  std::string dir;                     // dev.dir; made absolute
  int pg_port = 0;                     // 0 = the last one used, else a free one
  int redis_port = 0;                  // likewise
  std::string self_exe;                // the msgx binary, to spawn `msgx dev kafka`
  std::vector<std::string> topics;     // created by `msgx dev kafka`
  std::string mailbox = "postgresql";  // or "mariadb": where the mailbox lives
  int mariadb_port = 0;                // like pg_port
};

class DevServices {
 public:
  explicit DevServices(DevOptions options);

  Status Up(std::ostream& out);
  Status Down(std::ostream& out, bool purge);
  // kNotFound when the services have not been started (no port files).
  Result<std::string> EnvExports() const;

  const std::string& dir() const { return o_.dir; }

 private:
  Status UpPostgres(std::ostream& out);
  Status EnsureDatabases(int port, std::ostream& out);
  Status UpRedis(std::ostream& out);
  Status UpKafka(std::ostream& out);
  Status UpMariaDb(std::ostream& out);
  Status EnsureMariaDbMailbox(std::ostream& out);
  // Runs `sql` as the server's administrator through its socket.
  Result<std::string> MariaDbAdmin(const std::string& sql) const;
  Status DownPostgres(std::ostream& out);
  Status DownByPidFile(const std::string& name, const std::string& program, std::ostream& out);

  std::string Path(const std::string& leaf) const { return o_.dir + "/" + leaf; }

  DevOptions o_;
};

// Names of the mailbox and own databases that Up() creates.
inline constexpr const char* kDevOwnDb = "msgx";
inline constexpr const char* kDevMailboxDb = "aodb";
// The MariaDB mailbox's account (least privilege) that `env` names.
inline constexpr const char* kDevMariaDbUser = "msgx";
inline constexpr const char* kDevMariaDbPassword = "msgx";

}  // namespace msgx::app
