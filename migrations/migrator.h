// Migrator: brings msgx's own PostgreSQL database to the schema of the
// migration files. Never pointed at the mailbox database
// (docs/capture.md#the-mailbox-is-not-ours): the caller passes the own
// database's URL, and `msgx migrate` refuses a postgres.url equal to
// mailbox.url.
//
// Files: `V<n>__<name>.sql` in one directory, n a positive integer (gaps
// allowed). Other files are ignored. Applied in numeric order.
//
// Guarantees:
//   - each file runs in its own transaction together with its row in
//     `schema_version` (version, name, checksum, applied_at), so a file is
//     either fully applied and recorded, or not at all;
//   - the checksum is the SHA-256 (OpenSSL EVP) of the file's bytes, in hex;
//   - before applying anything it verifies the applied history and refuses,
//     with a kConfig Status naming the file, when an applied file's checksum
//     or name changed, when an applied version has no file any more, or when
//     a new file's version is below the highest applied one (migrations only
//     add, at the end);
//   - rerunning on an up-to-date database changes nothing;
//   - a session-level PostgreSQL advisory lock (kAdvisoryLockKey) is held
//     while verifying and migrating, so two processes never race; the
//     second waits up to `lock_timeout`, then fails with kInfra.
// `schema_version` itself is created by the migrator (CREATE TABLE IF NOT
// EXISTS), not by a migration file.
//
// Errors: kInfra when PostgreSQL cannot be reached or the lock not taken;
// kConfig for a bad directory or a history mismatch; kInternal when a file's
// SQL fails (the message names the file and PostgreSQL's error).
//
// Thread-safety: a Migrator holds no state between calls; Migrate() may be
// called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"

namespace msgx {

struct MigrationFile {
  int version = 0;
  std::string name;  // the file name, e.g. "V1__init.sql"
  std::string path;
  std::string checksum;  // hex SHA-256 of the bytes
  std::string sql;
};

struct MigrationReport {
  std::vector<std::string> applied;  // file names applied by this run, in order
  int already_applied = 0;           // files found applied before this run
};

class Migrator {
 public:
  // "msgx" "migrate" as one 64-bit key for pg_advisory_lock.
  static constexpr std::int64_t kAdvisoryLockKey = 0x6d7367786d696772;  // "msgxmigr"

  explicit Migrator(std::string dir,
                    std::chrono::milliseconds lock_timeout = std::chrono::seconds(60));

  // Reads and checksums the directory's migration files, sorted by version.
  // kConfig if the directory is unreadable, has none, or has a duplicate
  // version.
  Result<std::vector<MigrationFile>> ListFiles() const;

  // Verifies and applies, as described above, on the database at `url`.
  Result<MigrationReport> Migrate(const std::string& url) const;

 private:
  std::string dir_;
  std::chrono::milliseconds lock_timeout_;
};

// Hex SHA-256 of `bytes`.
std::string Sha256Hex(const std::string& bytes);

}  // namespace msgx
