// PgServer (tests/support/servers.h): a throwaway PostgreSQL 15 cluster.
//
// The postmaster is run directly as our child (not daemonized by pg_ctl), so
// that it can carry PR_SET_PDEATHSIG=SIGQUIT: even a SIGKILLed test binary
// takes its PostgreSQL with it. SIGQUIT is PostgreSQL's immediate shutdown,
// which also ends the backends. Readiness is `pg_isready`, as pg_ctl -w does.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/subprocess.h"
#include "tests/support/cleanup_registry.h"
#include "tests/support/server_start.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dirs.h"

namespace msgx::testing {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPgBin = "/usr/lib/postgresql/15/bin";

std::string PgTool(const std::string& name) {
  const char* dir = std::getenv("MSGX_TEST_PG_BIN");
  return std::string(dir != nullptr ? dir : kPgBin) + "/" + name;
}

[[noreturn]] void FailStart(const std::string& what) { FailServerStart("PgServer", what); }

}  // namespace

struct PgServer::Impl {
  fs::path root;  // owned temp dir: data/, sockets, postgres.log
  int port = 0;
  pid_t pid = 0;
  int handle = -1;
  std::optional<UserIds> run_as;

  fs::path DataDir() const { return root / "data"; }
  fs::path LogPath() const { return root / "postgres.log"; }

  SpawnOptions Options(std::vector<std::string> argv) const {
    SpawnOptions o;
    o.argv = std::move(argv);
    o.run_as = run_as;
    o.working_dir = root.string();
    return o;
  }

  std::string LogTail() const {
    Result<std::string> text = ReadFileToString(LogPath().string());
    if (!text.ok()) return "(no log)";
    const std::string& s = *text;
    return s.size() > 4000 ? s.substr(s.size() - 4000) : s;
  }

  // Starts the postmaster on `port` and waits until it accepts connections.
  Status Launch() {
    SpawnOptions o =
        Options({PgTool("postgres"), "-D", DataDir().string(), "-p", std::to_string(port), "-c",
                 "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=" + root.string(),
                 "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
                 "-c", "max_connections=50", "-c", "shared_buffers=16MB"});
    o.stdout_path = LogPath().string();
    o.stderr_path = LogPath().string();
    o.append_output = true;
    o.parent_death_signal = SIGQUIT;
    Result<pid_t> spawned = Spawn(o);
    if (!spawned.ok()) return spawned.status();
    pid = *spawned;
    CleanupRegistry::SetPid(handle, pid);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::optional<ExitStatus> gone = PollExit(pid)) {
        pid = 0;
        CleanupRegistry::SetPid(handle, 0);
        return Status::Infra("postgres exited with " + std::to_string(gone->code) + ":\n" +
                             LogTail());
      }
      Result<CommandOutput> ready = RunCommand(
          Options({PgTool("pg_isready"), "-q", "-h", "127.0.0.1", "-p", std::to_string(port)}), "",
          std::chrono::seconds(10));
      if (ready.ok() && ready->status.ok()) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Status::Infra("postgres not ready after 60s:\n" + LogTail());
  }

  void Shutdown() {
    if (pid > 0) {
      // SIGINT = fast shutdown; SIGQUIT = immediate, if fast takes too long.
      (void)StopProcess(pid, SIGINT, std::chrono::seconds(20));
      if (ProcessAlive(pid)) (void)StopProcess(pid, SIGQUIT, std::chrono::seconds(5));
      pid = 0;
      CleanupRegistry::SetPid(handle, 0);
    }
  }

  void Destroy() {
    Shutdown();
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

std::unique_ptr<PgServer> PgServer::Start() {
  auto impl = std::make_unique<Impl>();
  if (RunningAsRoot()) {
    Result<UserIds> pg = LookupUser("postgres");
    if (!pg.ok()) FailStart("running as root but there is no postgres user to run PostgreSQL as");
    impl->run_as = *pg;
  }
  Result<std::string> root = MakeOwnedTempDir("pg", impl->run_as);
  if (!root.ok()) FailStart(root.status().ToString());
  impl->root = *root;
  Impl* raw = impl.get();
  impl->handle = CleanupRegistry::Add([raw] { raw->Destroy(); }, 0, SIGQUIT);

  Result<CommandOutput> init = RunCommand(
      raw->Options({PgTool("initdb"), "-D", raw->DataDir().string(), "-U", "postgres", "-A",
                    "trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"}));
  if (!init.ok() || !init->status.ok()) {
    std::string detail = init.ok() ? init->out + init->err : init.status().ToString();
    raw->Destroy();
    CleanupRegistry::Remove(raw->handle);
    FailStart("initdb failed: " + detail);
  }

  Status launched = LaunchOnFreePort(&raw->port, [raw] { return raw->Launch(); });
  if (!launched.ok()) {
    raw->Destroy();
    CleanupRegistry::Remove(raw->handle);
    FailStart(launched.ToString());
  }
  return std::unique_ptr<PgServer>(new PgServer(std::move(impl)));
}

PgServer::PgServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

PgServer::~PgServer() {
  CleanupRegistry::Remove(impl_->handle);
  impl_->Destroy();
}

int PgServer::port() const { return impl_->port; }

std::string PgServer::Url(const std::string& db) const {
  return "postgresql://postgres@127.0.0.1:" + std::to_string(impl_->port) + "/" + db;
}

void PgServer::CreateDatabase(const std::string& name) {
  std::string exists = Psql("postgres", "SELECT 1 FROM pg_database WHERE datname = '" + name + "'");
  if (exists.find('1') != std::string::npos) return;
  Psql("postgres", "CREATE DATABASE \"" + name + "\"");
}

std::string PgServer::Psql(const std::string& db, const std::string& sql) {
  SpawnOptions o;
  o.argv = {PgTool("psql"),
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            "127.0.0.1",
            "-p",
            std::to_string(impl_->port),
            "-U",
            "postgres",
            "-d",
            db,
            "-f",
            "-"};
  Result<CommandOutput> r = RunCommand(o, sql);
  if (!r.ok()) {
    ADD_FAILURE() << "psql could not run: " << r.status().ToString();
    return "";
  }
  if (!r->status.ok()) {
    ADD_FAILURE() << "psql failed (exit " << r->status.code << ") on:\n" << sql << "\n" << r->err;
  }
  return r->out;
}

void PgServer::Stop() { impl_->Shutdown(); }

void PgServer::Restart() {
  impl_->Shutdown();
  Status s = impl_->Launch();
  if (!s.ok()) ADD_FAILURE() << "PgServer::Restart: " << s.ToString();
}

}  // namespace msgx::testing
