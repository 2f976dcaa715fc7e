// MariaDbServer (tests/support/servers.h): a throwaway MariaDB 10.11.
//
// mariadbd runs directly as our child with PR_SET_PDEATHSIG=SIGKILL: even
// a SIGKILLed test binary takes its server with it (the data directory is
// thrown away, so no clean shutdown is needed then). Readiness is
// `mariadb-admin ping` through the socket.
#include <gtest/gtest.h>
#include <pwd.h>
#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <thread>

#include "base/subprocess.h"
#include "tests/support/cleanup_registry.h"
#include "tests/support/server_start.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dirs.h"

namespace msgx::testing {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void FailStart(const std::string& what) { FailServerStart("MariaDbServer", what); }

}  // namespace

struct MariaDbServer::Impl {
  fs::path root;  // owned temp dir: data/, mysqld.sock, mariadb.log
  int port = 0;
  pid_t pid = 0;
  int handle = -1;
  std::optional<UserIds> run_as;

  fs::path DataDir() const { return root / "data"; }
  fs::path Socket() const { return root / "mysqld.sock"; }
  fs::path LogPath() const { return root / "mariadb.log"; }

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

  Status Launch() {
    SpawnOptions o = Options({"mariadbd",
                              "--no-defaults",
                              "--datadir=" + DataDir().string(),
                              "--socket=" + Socket().string(),
                              "--tmpdir=" + root.string(),
                              "--port=" + std::to_string(port),
                              "--bind-address=127.0.0.1",
                              "--pid-file=" + (root / "mariadbd.pid").string(),
                              "--log-error=" + LogPath().string(),
                              "--skip-name-resolve",
                              "--skip-log-bin",
                              "--character-set-server=utf8mb4",
                              "--collation-server=utf8mb4_bin",
                              "--max-allowed-packet=64M",
                              "--max-connections=100",
                              "--innodb-buffer-pool-size=32M",
                              "--innodb-log-file-size=16M",
                              "--innodb-flush-log-at-trx-commit=0",
                              "--innodb-doublewrite=0",
                              "--performance-schema=OFF"});
    o.stdout_path = (root / "mariadbd.out").string();
    o.stderr_path = o.stdout_path;
    o.append_output = true;
    o.parent_death_signal = SIGKILL;
    Result<pid_t> spawned = Spawn(o);
    if (!spawned.ok()) return spawned.status();
    pid = *spawned;
    CleanupRegistry::SetPid(handle, pid);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::optional<ExitStatus> gone = PollExit(pid)) {
        pid = 0;
        CleanupRegistry::SetPid(handle, 0);
        return Status::Infra("mariadbd exited with " + std::to_string(gone->code) + ":\n" +
                             LogTail());
      }
      Result<CommandOutput> ready =
          RunCommand(Options({"mariadb-admin", "--no-defaults", "-S", Socket().string(), "-uroot",
                              "--connect-timeout=2", "ping"}),
                     "", std::chrono::seconds(10));
      if (ready.ok() && ready->status.ok()) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return Status::Infra("mariadbd not ready after 60s:\n" + LogTail());
  }

  void Shutdown() {
    if (pid > 0) {
      (void)StopProcess(pid, SIGTERM, std::chrono::seconds(20));
      if (ProcessAlive(pid)) (void)StopProcess(pid, SIGKILL, std::chrono::seconds(5));
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

std::unique_ptr<MariaDbServer> MariaDbServer::Start() {
  auto impl = std::make_unique<Impl>();
  if (RunningAsRoot()) {
    Result<UserIds> my = LookupUser("mysql");
    if (!my.ok()) FailStart("running as root but there is no mysql user to run MariaDB as");
    impl->run_as = *my;
  }
  Result<std::string> root = MakeOwnedTempDir("mariadb", impl->run_as);
  if (!root.ok()) FailStart(root.status().ToString());
  impl->root = *root;
  Impl* raw = impl.get();
  impl->handle = CleanupRegistry::Add([raw] { raw->Destroy(); }, 0, SIGKILL);

  auto fail = [raw](const std::string& what) {
    raw->Destroy();
    CleanupRegistry::Remove(raw->handle);
    FailStart(what);
  };
  Result<CommandOutput> init = RunCommand(
      raw->Options({"mariadb-install-db", "--no-defaults", "--datadir=" + raw->DataDir().string(),
                    // Its own temporary files, not /tmp's: a server being installed beside
                    // another (a second test binary) failed on a temporary table there.
                    "--tmpdir=" + raw->root.string(), "--auth-root-authentication-method=socket",
                    "--skip-test-db", "--skip-name-resolve"}));
  if (!init.ok() || !init->status.ok()) {
    fail("mariadb-install-db failed: " +
         (init.ok() ? init->out + init->err : init.status().ToString()));
  }
  Status launched = LaunchOnFreePort(&raw->port, [raw] { return raw->Launch(); });
  if (!launched.ok()) fail(launched.ToString());
  auto server = std::unique_ptr<MariaDbServer>(new MariaDbServer(std::move(impl)));
  server->Sql("mysql",
              "CREATE USER 'msgx'@'%' IDENTIFIED BY 'msgx';"
              "GRANT ALL PRIVILEGES ON *.* TO 'msgx'@'%' WITH GRANT OPTION;");
  return server;
}

MariaDbServer::MariaDbServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MariaDbServer::~MariaDbServer() {
  CleanupRegistry::Remove(impl_->handle);
  impl_->Destroy();
}

int MariaDbServer::port() const { return impl_->port; }

std::string MariaDbServer::socket() const { return impl_->Socket().string(); }

std::string MariaDbServer::Url(const std::string& db, const std::string& user,
                               const std::string& password) const {
  return "mysql://" + user + ":" + password + "@127.0.0.1:" + std::to_string(impl_->port) + "/" +
         db;
}

std::string MariaDbServer::Sql(const std::string& db, const std::string& sql) {
  // As this process's own user, through the socket: root when root (the
  // unix_socket root account), else the account mariadb-install-db made for
  // the user who ran it (the same user then).
  const passwd* me = getpwuid(geteuid());
  SpawnOptions o;
  o.argv = {"mariadb",
            "--no-defaults",
            "-S",
            socket(),
            std::string("-u") + (me != nullptr ? me->pw_name : "root"),
            "-N",
            "-B",
            "--max-allowed-packet=64M",
            "--default-character-set=utf8mb4",
            db};
  Result<CommandOutput> r = RunCommand(o, sql);
  if (!r.ok()) {
    ADD_FAILURE() << "mariadb could not run: " << r.status().ToString();
    return "";
  }
  if (!r->status.ok()) {
    ADD_FAILURE() << "mariadb failed (exit " << r->status.code << ") on:\n"
                  << sql.substr(0, 2000) << "\n"
                  << r->err;
  }
  return r->out;
}

void MariaDbServer::Stop() { impl_->Shutdown(); }

void MariaDbServer::Restart() {
  impl_->Shutdown();
  Status s = impl_->Launch();
  if (!s.ok()) ADD_FAILURE() << "MariaDbServer::Restart: " << s.ToString();
}

}  // namespace msgx::testing
