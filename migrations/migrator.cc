#include "migrations/migrator.h"

#include <openssl/evp.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <pqxx/pqxx>
#include <regex>
#include <sstream>
#include <thread>

#include "base/log.h"

namespace msgx {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCreateSchemaVersion = R"sql(
CREATE TABLE IF NOT EXISTS schema_version (
  version    INT PRIMARY KEY,
  name       VARCHAR(200) NOT NULL,
  checksum   VARCHAR(64) NOT NULL,
  applied_at TIMESTAMPTZ(6) NOT NULL DEFAULT now()
))sql";

struct AppliedRow {
  int version = 0;
  std::string name;
  std::string checksum;
};

// Holds pg_advisory_lock on `conn` until destroyed (or the session ends).
class AdvisoryLock {
 public:
  explicit AdvisoryLock(pqxx::connection& conn) : conn_(conn) {}
  ~AdvisoryLock() {
    if (!held_) return;
    try {
      pqxx::nontransaction n(conn_);
      n.exec("SELECT pg_advisory_unlock(" + std::to_string(Migrator::kAdvisoryLockKey) + ")");
    } catch (const std::exception&) {
      // The session ends with the connection, and the lock with it.
    }
  }
  AdvisoryLock(const AdvisoryLock&) = delete;
  AdvisoryLock& operator=(const AdvisoryLock&) = delete;

  // Tries until `timeout`; true once held.
  bool Acquire(std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      {
        pqxx::nontransaction n(conn_);
        pqxx::row r = n.exec1("SELECT pg_try_advisory_lock(" +
                              std::to_string(Migrator::kAdvisoryLockKey) + ")");
        held_ = r[0].as<bool>();
      }
      if (held_) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }

 private:
  pqxx::connection& conn_;
  bool held_ = false;
};

Result<std::vector<AppliedRow>> ReadApplied(pqxx::connection& conn) {
  std::vector<AppliedRow> rows;
  pqxx::work w(conn);
  w.exec0(kCreateSchemaVersion);
  pqxx::result r = w.exec("SELECT version, name, checksum FROM schema_version ORDER BY version");
  for (const pqxx::row& row : r) {
    rows.push_back({row[0].as<int>(), row[1].as<std::string>(), row[2].as<std::string>()});
  }
  w.commit();
  return rows;
}

// The history check: what is applied must still be there, unchanged, and
// new files may only come after it.
Status Verify(const std::vector<MigrationFile>& files, const std::vector<AppliedRow>& applied,
              const std::string& dir) {
  std::map<int, const MigrationFile*> by_version;
  for (const MigrationFile& f : files) by_version[f.version] = &f;
  int max_applied = 0;
  for (const AppliedRow& a : applied) {
    max_applied = std::max(max_applied, a.version);
    auto it = by_version.find(a.version);
    if (it == by_version.end()) {
      return Status::Config(a.name + ": applied as version " + std::to_string(a.version) +
                            " but no such file in " + dir);
    }
    const MigrationFile& f = *it->second;
    if (f.name != a.name) {
      return Status::Config(f.name + ": version " + std::to_string(a.version) + " was applied as " +
                            a.name + "; applied files are never renamed");
    }
    if (f.checksum != a.checksum) {
      return Status::Config(f.name + ": checksum changed since it was applied (applied " +
                            a.checksum + ", file now " + f.checksum +
                            "); applied migrations are never edited, add a new one");
    }
  }
  for (const MigrationFile& f : files) {
    bool is_applied = std::any_of(applied.begin(), applied.end(),
                                  [&](const AppliedRow& a) { return a.version == f.version; });
    if (!is_applied && f.version < max_applied) {
      return Status::Config(f.name + ": not applied, but older than applied version " +
                            std::to_string(max_applied) + "; new migrations go at the end");
    }
  }
  return Status::Ok();
}

Result<MigrationReport> MigrateLocked(pqxx::connection& conn,
                                      const std::vector<MigrationFile>& files,
                                      const std::string& dir) {
  Result<std::vector<AppliedRow>> applied = ReadApplied(conn);
  if (!applied.ok()) return applied.status();
  Status verified = Verify(files, *applied, dir);
  if (!verified.ok()) return verified;

  MigrationReport report;
  report.already_applied = static_cast<int>(applied->size());
  for (const MigrationFile& f : files) {
    bool is_applied = std::any_of(applied->begin(), applied->end(),
                                  [&](const AppliedRow& a) { return a.version == f.version; });
    if (is_applied) continue;
    try {
      pqxx::work w(conn);
      w.exec(f.sql);
      w.exec_params0("INSERT INTO schema_version (version, name, checksum) VALUES ($1, $2, $3)",
                     f.version, f.name, f.checksum);
      w.commit();
    } catch (const pqxx::broken_connection& e) {
      return Status::Infra(f.name + ": connection lost: " + e.what());
    } catch (const std::exception& e) {
      return Status::Internal(f.name + ": " + e.what());
    }
    Logger("migrate")->info("applied {}", f.name);
    report.applied.push_back(f.name);
  }
  return report;
}

}  // namespace

std::string Sha256Hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(static_cast<size_t>(len) * 2);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kHex[digest[i] >> 4]);
    out.push_back(kHex[digest[i] & 0xf]);
  }
  return out;
}

Migrator::Migrator(std::string dir, std::chrono::milliseconds lock_timeout)
    : dir_(std::move(dir)), lock_timeout_(lock_timeout) {}

Result<std::vector<MigrationFile>> Migrator::ListFiles() const {
  static const std::regex kName(R"(V([0-9]{1,9})__([A-Za-z0-9_.-]+)\.sql)");
  std::error_code ec;
  fs::directory_iterator it(dir_, ec);
  if (ec) return Status::Config("migrations dir " + dir_ + ": " + ec.message());
  std::vector<MigrationFile> files;
  for (const fs::directory_entry& e : it) {
    std::string name = e.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, kName) || !e.is_regular_file(ec)) continue;
    MigrationFile f;
    f.version = std::stoi(m[1].str());
    f.name = name;
    f.path = e.path().string();
    std::ifstream in(f.path, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in) return Status::Config(name + ": cannot read " + f.path);
    f.sql = ss.str();
    f.checksum = Sha256Hex(f.sql);
    if (f.version <= 0) return Status::Config(name + ": version must be positive");
    files.push_back(std::move(f));
  }
  std::sort(files.begin(), files.end(),
            [](const MigrationFile& a, const MigrationFile& b) { return a.version < b.version; });
  for (size_t i = 1; i < files.size(); ++i) {
    if (files[i].version == files[i - 1].version) {
      return Status::Config(files[i].name + ": same version as " + files[i - 1].name);
    }
  }
  if (files.empty()) return Status::Config("no V<n>__<name>.sql files in " + dir_);
  return files;
}

Result<MigrationReport> Migrator::Migrate(const std::string& url) const {
  Result<std::vector<MigrationFile>> files = ListFiles();
  if (!files.ok()) return files.status();
  try {
    pqxx::connection conn(url);
    AdvisoryLock lock(conn);
    if (!lock.Acquire(lock_timeout_)) {
      return Status::Infra("another process holds the migration lock (pg_advisory_lock " +
                           std::to_string(kAdvisoryLockKey) + ") for over " +
                           std::to_string(lock_timeout_.count()) + "ms");
    }
    return MigrateLocked(conn, *files, dir_);
  } catch (const pqxx::broken_connection& e) {
    return Status::Infra(std::string("cannot reach PostgreSQL: ") + e.what());
  } catch (const pqxx::sql_error& e) {
    return Status::Internal(std::string("migrate: ") + e.what() + " (in: " + e.query() + ")");
  } catch (const std::exception& e) {
    return Status::Infra(std::string("migrate: ") + e.what());
  }
}

}  // namespace msgx
