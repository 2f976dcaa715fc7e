#include "tools/dev_services.h"

#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <pqxx/pqxx>
#include <sstream>
#include <thread>
#include <vector>

#include "base/malloc_tuning.h"
#include "base/subprocess.h"
#include "stream/capture/mailbox_schema.h"

namespace msgx::app {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPgBin = "/usr/lib/postgresql/15/bin";

// glibc's allocator settings for the dev PostgreSQL's processes
// (docs/operations.md#postgresqls-allocator). The applier's and the
// dispatchers' statements allocate megabytes at once (binary arrays, sorts,
// result sets); with glibc's defaults a backend returns that memory after
// each statement and faults it in again for the next one: about 15% of
// PostgreSQL's time in a drain. The same mmap threshold as msgx's own
// (base/malloc_tuning.h); a smaller trim threshold than msgx's, as a
// database server runs many backends.
constexpr std::size_t kPostgresTrimThreshold = std::size_t{64} << 20;

std::vector<std::string> PostgresMallocEnv() {
  return {"MALLOC_MMAP_THRESHOLD_=" + std::to_string(kMmapThreshold),
          "MALLOC_TRIM_THRESHOLD_=" + std::to_string(kPostgresTrimThreshold)};
}

std::string PgTool(const std::string& name) { return std::string(kPgBin) + "/" + name; }

std::string Trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r' || s.back() == ' ')) s.pop_back();
  return s;
}

std::optional<std::string> ReadSmallFile(const std::string& path) {
  Result<std::string> text = ReadFileToString(path);
  if (!text.ok()) return std::nullopt;
  return Trim(*text);
}

Status WriteSmallFile(const std::string& path, const std::string& value) {
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << value << "\n";
    if (!out) return Status::Infra("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Status::Infra("cannot rename " + tmp + ": " + ec.message());
  return Status::Ok();
}

int ReadInt(const std::string& path) {
  std::optional<std::string> s = ReadSmallFile(path);
  if (!s || s->empty()) return 0;
  try {
    return std::stoi(*s);
  } catch (const std::exception&) {
    return 0;
  }
}

// The command line of a live process, NULs as spaces; empty if gone.
std::string CmdLine(pid_t pid) {
  Result<std::string> raw = ReadFileToString("/proc/" + std::to_string(pid) + "/cmdline");
  if (!raw.ok()) return "";
  std::string s = *raw;
  for (char& c : s) {
    if (c == '\0') c = ' ';
  }
  return s;
}

// True if `pid` is alive and its command line mentions `program`: a pid
// from a file is only trusted when it still names what we started.
bool PidRuns(pid_t pid, const std::string& program) {
  if (pid <= 0 || !ProcessAlive(pid)) return false;
  return CmdLine(pid).find(program) != std::string::npos;
}

// Waits until `pid` has gone, up to `timeout`.
bool WaitGone(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!ProcessAlive(pid)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return !ProcessAlive(pid);
}

std::string ShellQuote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

// Picks the port: requested, else the one recorded in `port_file` if it is
// still free, else a free one.
Result<int> ChoosePort(int requested, const std::string& port_file) {
  if (requested > 0) return requested;
  int recorded = ReadInt(port_file);
  if (recorded > 0 && !LoopbackPortOpen(recorded)) return recorded;
  return FreeLoopbackPort();
}

}  // namespace

DevServices::DevServices(DevOptions options) : o_(std::move(options)) {
  std::error_code ec;
  fs::path abs = fs::absolute(o_.dir, ec);
  if (!ec) o_.dir = abs.lexically_normal().string();
  while (o_.dir.size() > 1 && o_.dir.back() == '/') o_.dir.pop_back();
}

Status DevServices::Up(std::ostream& out) {
  std::error_code ec;
  fs::create_directories(o_.dir, ec);
  if (ec) return Status::Config("dev.dir " + o_.dir + ": " + ec.message());
  fs::create_directories(Path("state"), ec);
  if (Status s = UpPostgres(out); !s.ok()) return s;
  if (Status s = UpRedis(out); !s.ok()) return s;
  if (Status s = UpKafka(out); !s.ok()) return s;
  if (o_.mailbox == "mariadb") {
    if (Status s = UpMariaDb(out); !s.ok()) return s;
  } else if (o_.mailbox != "postgresql") {
    return Status::Config("--mailbox " + o_.mailbox + ": must be postgresql or mariadb");
  }
  if (Status s = WriteSmallFile(Path("mailbox"), o_.mailbox); !s.ok()) return s;
  out << "dev services are up in " << o_.dir << "; eval \"$(msgx dev env)\" to use them\n";
  return Status::Ok();
}

Status DevServices::UpPostgres(std::ostream& out) {
  const std::string data = Path("pg");
  std::optional<UserIds> run_as;
  if (RunningAsRoot()) {
    Result<UserIds> pg = LookupUser("postgres");
    if (!pg.ok()) return Status::Config("running as root, but there is no postgres user");
    run_as = *pg;
  }

  // Already running? postmaster.pid line 1 = pid, line 4 = port.
  std::optional<std::string> pidfile = ReadSmallFile(data + "/postmaster.pid");
  if (pidfile) {
    std::istringstream lines(*pidfile);
    std::string pid_line, dir_line, start_line, port_line;
    std::getline(lines, pid_line);
    std::getline(lines, dir_line);
    std::getline(lines, start_line);
    std::getline(lines, port_line);
    pid_t pid = static_cast<pid_t>(std::atol(pid_line.c_str()));
    if (PidRuns(pid, "postgres")) {
      int port = std::atoi(port_line.c_str());
      out << "postgres: already running on 127.0.0.1:" << port << " (pid " << pid << ")\n";
      if (Status s = WriteSmallFile(Path("pg.port"), std::to_string(port)); !s.ok()) return s;
      if (Status s = WriteSmallFile(Path("pg.pid"), std::to_string(pid)); !s.ok()) return s;
      return EnsureDatabases(port, out);
    }
  }

  if (run_as) {
    // Every parent of dev.dir must let `postgres` through (o+x).
    SpawnOptions probe;
    probe.argv = {"test", "-x", o_.dir};
    probe.run_as = run_as;
    probe.working_dir = "/";
    Result<CommandOutput> r = RunCommand(probe);
    if (!r.ok() || !r->status.ok()) {
      return Status::Config("the postgres user cannot reach dev.dir " + o_.dir +
                            "; choose another (MSGX_DEV_DIR), e.g. under /var/tmp");
    }
  }

  std::error_code ec;
  if (!fs::exists(data + "/PG_VERSION")) {
    fs::create_directories(data, ec);
    if (ec) return Status::Infra("mkdir " + data + ": " + ec.message());
    chmod(data.c_str(), 0700);
    if (run_as && chown(data.c_str(), run_as->uid, run_as->gid) != 0) {
      return Status::Infra("chown " + data + ": " + std::strerror(errno));
    }
    SpawnOptions init;
    init.argv = {PgTool("initdb"), "-D", data,   "-U",          "postgres",         "-A",
                 "trust",          "-E", "UTF8", "--no-locale", "--no-instructions"};
    init.run_as = run_as;
    init.working_dir = data;
    Result<CommandOutput> r = RunCommand(init);
    if (!r.ok()) return r.status();
    if (!r->status.ok()) {
      std::string hint =
          run_as ? " (can the postgres user reach " + o_.dir + "? every parent directory needs o+x)"
                 : "";
      return Status::Infra("initdb failed" + hint + ":\n" + r->out + r->err);
    }
    out << "postgres: initialised " << data << "\n";
  }

  Result<int> port = ChoosePort(o_.pg_port, Path("pg.port"));
  if (!port.ok()) return port.status();
  const std::string log = Path("pg.log");
  { std::ofstream touch(log, std::ios::app); }
  if (run_as && chown(log.c_str(), run_as->uid, run_as->gid) != 0) {
    return Status::Infra("chown " + log + ": " + std::strerror(errno));
  }
  SpawnOptions start;
  start.argv = {PgTool("pg_ctl"), "start", "-w", "-t", "60", "-D", data, "-l", log, "-o",
                // max_wal_size: at 5,000 msg/s msgx writes about 15 MB of WAL a
                // second, so PostgreSQL's 1 GB default starts a checkpoint
                // every half minute, and each one's writes stall the
                // pipeline (docs/operations.md#postgresqls-checkpoints).
                "-p " + std::to_string(*port) +
                    " -c listen_addresses=127.0.0.1 -c unix_socket_directories=''"
                    " -c max_wal_size=4GB"};
  start.run_as = run_as;
  start.working_dir = data;
  start.new_session = true;
  start.extra_env = PostgresMallocEnv();
  Result<CommandOutput> r = RunCommand(start);
  if (!r.ok()) return r.status();
  if (!r->status.ok()) {
    Result<std::string> tail = ReadFileToString(log);
    return Status::Infra("pg_ctl start failed:\n" + r->out + r->err + (tail.ok() ? *tail : ""));
  }
  std::optional<std::string> started = ReadSmallFile(data + "/postmaster.pid");
  pid_t pid = started ? static_cast<pid_t>(std::atol(started->c_str())) : 0;
  if (Status s = WriteSmallFile(Path("pg.port"), std::to_string(*port)); !s.ok()) return s;
  if (Status s = WriteSmallFile(Path("pg.pid"), std::to_string(pid)); !s.ok()) return s;
  out << "postgres: started on 127.0.0.1:" << *port << " (pid " << pid << ")\n";
  return EnsureDatabases(*port, out);
}

Status DevServices::EnsureDatabases(int port, std::ostream& out) {
  const std::string base = "postgresql://postgres@127.0.0.1:" + std::to_string(port) + "/";
  try {
    pqxx::connection admin(base + "postgres");
    for (const char* db : {kDevOwnDb, kDevMailboxDb}) {
      pqxx::nontransaction n(admin);
      pqxx::result exists =
          n.exec_params("SELECT 1 FROM pg_database WHERE datname = $1", std::string(db));
      if (exists.empty()) {
        n.exec0(std::string("CREATE DATABASE ") + db);
        out << "postgres: created database " << db << "\n";
      }
    }
    pqxx::connection mailbox(base + kDevMailboxDb);
    pqxx::work w(mailbox);
    w.exec0(kLocalMailboxDdl);
    w.commit();
  } catch (const std::exception& e) {
    return Status::Infra(std::string("postgres: preparing databases: ") + e.what());
  }
  return Status::Ok();
}

Status DevServices::UpRedis(std::ostream& out) {
  pid_t pid = static_cast<pid_t>(ReadInt(Path("redis.pid")));
  if (PidRuns(pid, "redis-server")) {
    out << "redis: already running on 127.0.0.1:" << ReadInt(Path("redis.port")) << " (pid " << pid
        << ")\n";
    return Status::Ok();
  }
  Result<int> port = ChoosePort(o_.redis_port, Path("redis.port"));
  if (!port.ok()) return port.status();
  std::error_code ec;
  fs::create_directories(Path("redis"), ec);
  SpawnOptions o;
  o.argv = {"redis-server", "--port", std::to_string(*port), "--bind", "127.0.0.1",
            "--save",       "",       "--appendonly",        "no",     "--daemonize",
            "no",           "--dir",  Path("redis")};
  o.stdout_path = Path("redis.log");
  o.stderr_path = o.stdout_path;
  o.append_output = true;
  o.new_session = true;
  Result<pid_t> spawned = Spawn(o);
  if (!spawned.ok()) return spawned.status();
  SpawnOptions ping;
  ping.argv = {"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(*port), "PING"};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  for (;;) {
    if (std::optional<ExitStatus> gone = PollExit(*spawned)) {
      Result<std::string> log = ReadFileToString(Path("redis.log"));
      return Status::Infra("redis-server exited (" + std::to_string(gone->code) +
                           "): " + (log.ok() ? *log : ""));
    }
    Result<CommandOutput> r = RunCommand(ping, "", std::chrono::seconds(5));
    if (r.ok() && r->out.find("PONG") != std::string::npos) break;
    if (std::chrono::steady_clock::now() > deadline) {
      (void)StopProcess(*spawned, SIGTERM, std::chrono::seconds(5));
      return Status::Infra("redis-server not answering on port " + std::to_string(*port));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (Status s = WriteSmallFile(Path("redis.port"), std::to_string(*port)); !s.ok()) return s;
  if (Status s = WriteSmallFile(Path("redis.pid"), std::to_string(*spawned)); !s.ok()) return s;
  out << "redis: started on 127.0.0.1:" << *port << " (pid " << *spawned << ")\n";
  return Status::Ok();
}

Status DevServices::UpKafka(std::ostream& out) {
  pid_t pid = static_cast<pid_t>(ReadInt(Path("kafka.pid")));
  std::optional<std::string> bootstrap = ReadSmallFile(Path("kafka.bootstrap"));
  if (PidRuns(pid, "dev kafka") && bootstrap) {
    out << "kafka: already running on " << *bootstrap << " (pid " << pid << ")\n";
    return Status::Ok();
  }
  std::error_code ec;
  fs::remove(Path("kafka.bootstrap"), ec);
  SpawnOptions o;
  o.argv = {o_.self_exe, "dev", "kafka", "--dir", o_.dir};
  o.stdout_path = Path("kafka.log");
  o.stderr_path = o.stdout_path;
  o.append_output = true;
  o.new_session = true;
  Result<pid_t> spawned = Spawn(o);
  if (!spawned.ok()) return spawned.status();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  for (;;) {
    if (std::optional<ExitStatus> gone = PollExit(*spawned)) {
      Result<std::string> log = ReadFileToString(Path("kafka.log"));
      return Status::Infra("msgx dev kafka exited (" + std::to_string(gone->code) +
                           "): " + (log.ok() ? *log : ""));
    }
    bootstrap = ReadSmallFile(Path("kafka.bootstrap"));
    if (bootstrap && !bootstrap->empty()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      (void)StopProcess(*spawned, SIGTERM, std::chrono::seconds(5));
      return Status::Infra("msgx dev kafka wrote no kafka.bootstrap within 20s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (Status s = WriteSmallFile(Path("kafka.pid"), std::to_string(*spawned)); !s.ok()) return s;
  out << "kafka: mock cluster on " << *bootstrap << " (pid " << *spawned << ")\n";
  return Status::Ok();
}

namespace {

// The OS user mariadbd and its tools run as: `mysql` when we are root.
Result<std::optional<UserIds>> MariaDbRunAs() {
  if (!RunningAsRoot()) return std::optional<UserIds>();
  Result<UserIds> my = LookupUser("mysql");
  if (!my.ok()) return Status::Config("running as root, but there is no mysql user");
  return std::optional<UserIds>(*my);
}

}  // namespace

Result<std::string> DevServices::MariaDbAdmin(const std::string& sql) const {
  // As this process's user through the socket: root (unix_socket) when
  // root, else the account mariadb-install-db made for the user who ran it.
  const passwd* pw = getpwuid(geteuid());
  const std::string me = pw != nullptr ? pw->pw_name : "root";
  SpawnOptions o;
  o.argv = {"mariadb", "--no-defaults",
            "-S",      Path("mariadb/mysqld.sock"),
            "-u" + me, "-N",
            "-B",      "--default-character-set=utf8mb4"};
  Result<CommandOutput> r = RunCommand(o, sql, std::chrono::seconds(60));
  if (!r.ok()) return r.status();
  if (!r->status.ok()) return Status::Infra("mariadb: " + r->err);
  return r->out;
}

Status DevServices::UpMariaDb(std::ostream& out) {
  Result<std::optional<UserIds>> run_as = MariaDbRunAs();
  if (!run_as.ok()) return run_as.status();
  const std::string run_dir = Path("mariadb");
  const std::string data = run_dir + "/data";
  pid_t pid = static_cast<pid_t>(ReadInt(Path("mariadb.pid")));
  if (PidRuns(pid, "mariadbd")) {
    out << "mariadb: already running on 127.0.0.1:" << ReadInt(Path("mariadb.port")) << " (pid "
        << pid << ")\n";
    return EnsureMariaDbMailbox(out);
  }
  std::error_code ec;
  fs::create_directories(run_dir, ec);
  if (ec) return Status::Infra("mkdir " + run_dir + ": " + ec.message());
  chmod(run_dir.c_str(), 0700);
  if (*run_as && chown(run_dir.c_str(), (*run_as)->uid, (*run_as)->gid) != 0) {
    return Status::Infra("chown " + run_dir + ": " + std::strerror(errno));
  }
  if (!fs::exists(data + "/mysql")) {
    SpawnOptions init;
    init.argv = {"mariadb-install-db", "--no-defaults",
                 "--datadir=" + data,  "--auth-root-authentication-method=socket",
                 "--skip-test-db",     "--skip-name-resolve"};
    init.run_as = *run_as;
    init.working_dir = run_dir;
    Result<CommandOutput> r = RunCommand(init);
    if (!r.ok()) return r.status();
    if (!r->status.ok()) {
      return Status::Infra("mariadb-install-db failed (can the mysql user reach " + o_.dir +
                           "?):\n" + r->out + r->err);
    }
    out << "mariadb: initialised " << data << "\n";
  }
  Result<int> port = ChoosePort(o_.mariadb_port, Path("mariadb.port"));
  if (!port.ok()) return port.status();
  SpawnOptions o;
  o.argv = {"mariadbd",
            "--no-defaults",
            "--datadir=" + data,
            "--socket=" + run_dir + "/mysqld.sock",
            "--port=" + std::to_string(*port),
            "--bind-address=127.0.0.1",
            "--pid-file=" + run_dir + "/mariadbd.pid",
            "--log-error=" + run_dir + "/mariadb.log",
            "--skip-name-resolve",
            "--skip-log-bin",
            "--character-set-server=utf8mb4",
            "--collation-server=utf8mb4_bin",
            "--max-allowed-packet=64M",
            "--innodb-buffer-pool-size=64M"};
  o.run_as = *run_as;
  o.working_dir = run_dir;
  o.stdout_path = "/dev/null";
  o.stderr_path = o.stdout_path;
  o.new_session = true;
  Result<pid_t> spawned = Spawn(o);
  if (!spawned.ok()) return spawned.status();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    if (std::optional<ExitStatus> gone = PollExit(*spawned)) {
      Result<std::string> log = ReadFileToString(run_dir + "/mariadb.log");
      return Status::Infra("mariadbd exited (" + std::to_string(gone->code) +
                           "): " + (log.ok() ? *log : ""));
    }
    if (MariaDbAdmin("SELECT 1").ok()) break;
    if (std::chrono::steady_clock::now() > deadline) {
      (void)StopProcess(*spawned, SIGTERM, std::chrono::seconds(20));
      return Status::Infra("mariadbd not answering on port " + std::to_string(*port));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (Status s = WriteSmallFile(Path("mariadb.port"), std::to_string(*port)); !s.ok()) return s;
  if (Status s = WriteSmallFile(Path("mariadb.pid"), std::to_string(*spawned)); !s.ok()) return s;
  out << "mariadb: started on 127.0.0.1:" << *port << " (pid " << *spawned << ")\n";
  return EnsureMariaDbMailbox(out);
}

Status DevServices::EnsureMariaDbMailbox(std::ostream& out) {
  const std::string db = kDevMailboxDb;
  const std::string who = std::string("'") + kDevMariaDbUser + "'@'%'";
  Result<std::string> r = MariaDbAdmin(
      "CREATE DATABASE IF NOT EXISTS " + db + " CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;\n" +
      "USE " + db + ";\n" + kLocalMariaDbMailboxDdl + "\nCREATE USER IF NOT EXISTS " + who +
      " IDENTIFIED BY '" + kDevMariaDbPassword + "';\nGRANT SELECT, INSERT ON " + db +
      ".cminmsgs TO " + who + ";\nGRANT UPDATE (cminmsgs_date_processed, cminmsgs_status) ON " +
      db + ".cminmsgs TO " + who + ";\n");
  if (!r.ok()) return Status::Infra("mariadb: preparing the mailbox: " + r.status().message());
  out << "mariadb: mailbox " << db << ".cminmsgs ready (account " << kDevMariaDbUser << ")\n";
  return Status::Ok();
}

Status DevServices::Down(std::ostream& out, bool purge) {
  Status first;
  for (const Status& s :
       {DownByPidFile("kafka", "dev kafka", out), DownByPidFile("redis", "redis-server", out),
        DownByPidFile("mariadb", "mariadbd", out), DownPostgres(out)}) {
    if (!s.ok() && first.ok()) first = s;
  }
  std::error_code ec;
  fs::remove(Path("kafka.bootstrap"), ec);
  if (purge && first.ok()) {
    fs::remove_all(o_.dir, ec);
    if (ec) return Status::Infra("purge " + o_.dir + ": " + ec.message());
    out << "removed " << o_.dir << "\n";
  }
  return first;
}

Status DevServices::DownByPidFile(const std::string& name, const std::string& program,
                                  std::ostream& out) {
  const std::string pid_path = Path(name + ".pid");
  pid_t pid = static_cast<pid_t>(ReadInt(pid_path));
  std::error_code ec;
  if (!PidRuns(pid, program)) {
    if (pid > 0) out << name << ": not running (stale pid " << pid << ")\n";
    fs::remove(pid_path, ec);
    return Status::Ok();
  }
  kill(pid, SIGTERM);
  if (!WaitGone(pid, std::chrono::seconds(15))) {
    kill(pid, SIGKILL);
    if (!WaitGone(pid, std::chrono::seconds(5))) {
      return Status::Infra(name + ": pid " + std::to_string(pid) + " survived SIGKILL");
    }
  }
  fs::remove(pid_path, ec);
  out << name << ": stopped (pid " << pid << ")\n";
  return Status::Ok();
}

Status DevServices::DownPostgres(std::ostream& out) {
  const std::string data = Path("pg");
  std::optional<std::string> pidfile = ReadSmallFile(data + "/postmaster.pid");
  pid_t pid = pidfile ? static_cast<pid_t>(std::atol(pidfile->c_str())) : 0;
  std::error_code ec;
  if (!PidRuns(pid, "postgres")) {
    fs::remove(Path("pg.pid"), ec);
    return Status::Ok();
  }
  SpawnOptions stop;
  stop.argv = {PgTool("pg_ctl"), "stop", "-w", "-t", "60", "-m", "fast", "-D", data};
  if (RunningAsRoot()) {
    Result<UserIds> pg = LookupUser("postgres");
    if (pg.ok()) stop.run_as = *pg;
  }
  stop.working_dir = data;
  Result<CommandOutput> r = RunCommand(stop);
  if (!r.ok() || !r->status.ok()) {
    // pg_ctl failed: immediate shutdown by signal, then make sure.
    kill(pid, SIGQUIT);
  }
  if (!WaitGone(pid, std::chrono::seconds(20))) {
    return Status::Infra("postgres: postmaster " + std::to_string(pid) + " did not stop");
  }
  fs::remove(Path("pg.pid"), ec);
  out << "postgres: stopped (pid " << pid << ")\n";
  return Status::Ok();
}

Result<std::string> DevServices::EnvExports() const {
  int pg_port = ReadInt(Path("pg.port"));
  int redis_port = ReadInt(Path("redis.port"));
  std::optional<std::string> bootstrap = ReadSmallFile(Path("kafka.bootstrap"));
  std::optional<std::string> postmaster = ReadSmallFile(Path("pg/postmaster.pid"));
  bool running = postmaster &&
                 PidRuns(static_cast<pid_t>(std::atol(postmaster->c_str())), "postgres") &&
                 PidRuns(static_cast<pid_t>(ReadInt(Path("redis.pid"))), "redis-server") &&
                 PidRuns(static_cast<pid_t>(ReadInt(Path("kafka.pid"))), "dev kafka");
  if (!running || pg_port == 0 || redis_port == 0 || !bootstrap || bootstrap->empty()) {
    return Status::NotFound("dev services are not (all) up in " + o_.dir + "; run `msgx dev up`");
  }
  const std::string pg = "postgresql://postgres@127.0.0.1:" + std::to_string(pg_port) + "/";
  std::string s;
  auto line = [&s](const std::string& name, const std::string& value) {
    s += "export " + name + "=" + ShellQuote(value) + "\n";
  };
  line("MSGX_POSTGRES_URL", pg + kDevOwnDb);
  if (ReadSmallFile(Path("mailbox")).value_or("") == "mariadb") {
    const int port = ReadInt(Path("mariadb.port"));
    if (port == 0 || !PidRuns(static_cast<pid_t>(ReadInt(Path("mariadb.pid"))), "mariadbd")) {
      return Status::NotFound("the dev MariaDB mailbox is not up in " + o_.dir +
                              "; run `msgx dev up --mailbox mariadb`");
    }
    line("MSGX_MAILBOX_URL", std::string("mysql://") + kDevMariaDbUser + ":" + kDevMariaDbPassword +
                                 "@127.0.0.1:" + std::to_string(port) + "/" + kDevMailboxDb);
  } else {
    line("MSGX_MAILBOX_URL", pg + kDevMailboxDb);
  }
  line("MSGX_REDIS_URL", "redis://127.0.0.1:" + std::to_string(redis_port) + "/0");
  line("MSGX_KAFKA_BOOTSTRAP_SERVERS", *bootstrap);
  line("MSGX_STATE_DIR", Path("state"));
  line("MSGX_DEV_DIR", o_.dir);
  return s;
}

}  // namespace msgx::app
