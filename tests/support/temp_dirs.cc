#include "tests/support/temp_dirs.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

namespace msgx::testing {
namespace {

namespace fs = std::filesystem;

bool PidAlive(pid_t pid) { return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM); }

pid_t ReadPid(const fs::path& file) {
  std::ifstream in(file);
  long pid = 0;
  if (!(in >> pid)) return 0;
  return static_cast<pid_t>(pid);
}

}  // namespace

void SweepStaleTempDirs() {
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator("/tmp", ec)) {
    std::string name = e.path().filename().string();
    if (name.rfind("msgx-test-", 0) != 0 || !e.is_directory(ec)) continue;
    pid_t owner = ReadPid(e.path() / "owner.pid");
    if (owner == 0 || PidAlive(owner)) continue;
    // A PostgreSQL that somehow survived its owner still holds the data dir.
    pid_t postmaster = ReadPid(e.path() / "data" / "postmaster.pid");
    if (PidAlive(postmaster)) continue;
    fs::remove_all(e.path(), ec);
  }
}

Result<std::string> MakeOwnedTempDir(const std::string& kind, const std::optional<UserIds>& owner) {
  SweepStaleTempDirs();
  std::string tmpl = "/tmp/msgx-test-" + kind + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    return Status::Infra("mkdtemp " + tmpl + ": " + std::strerror(errno));
  }
  {
    std::ofstream pid_file(tmpl + "/owner.pid");
    pid_file << getpid() << "\n";
  }
  if (owner && chown(tmpl.c_str(), owner->uid, owner->gid) != 0) {
    return Status::Infra("chown " + tmpl + ": " + std::strerror(errno));
  }
  return tmpl;
}

}  // namespace msgx::testing
