#include "base/subprocess.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <shared_mutex>
#include <sstream>
#include <thread>

namespace msgx {
namespace {

std::string ErrnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

// Resolves argv[0] through PATH before fork (execvp may allocate).
Result<std::string> ResolveProgram(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/local/bin:/usr/bin:/bin";
  std::stringstream ss(dirs);
  std::string dir;
  while (std::getline(ss, dir, ':')) {
    if (dir.empty()) dir = ".";
    std::string candidate = dir;
    candidate += "/";
    candidate += name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return Status::NotFound("program not found in PATH: " + name);
}

ExitStatus FromWaitStatus(int ws) {
  if (WIFEXITED(ws)) return ExitStatus{WEXITSTATUS(ws)};
  if (WIFSIGNALED(ws)) return ExitStatus{-WTERMSIG(ws)};
  return ExitStatus{-1};
}

// The child side of Spawn(): async-signal-safe calls only. Never returns.
[[noreturn]] void ExecChild(const SpawnOptions& o, const char* program, char** argv, char** envp,
                            int in_fd, int out_fd, int err_fd) {
  if (o.new_session) setsid();
  if (in_fd >= 0) dup2(in_fd, 0);
  if (out_fd >= 0) dup2(out_fd, 1);
  if (err_fd >= 0) dup2(err_fd, 2);
  // Close everything else we hold (sockets of librdkafka, RocksDB files).
  syscall(SYS_close_range, 3U, ~0U, 0U);
  if (!o.working_dir.empty() && chdir(o.working_dir.c_str()) != 0) _exit(126);
  if (o.run_as) {
    if (setgroups(0, nullptr) != 0) _exit(126);
    if (setgid(o.run_as->gid) != 0) _exit(126);
    if (setuid(o.run_as->uid) != 0) _exit(126);
  }
  // After setuid: a change of credentials clears the parent-death signal.
  if (o.parent_death_signal != 0) prctl(PR_SET_PDEATHSIG, o.parent_death_signal);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  execve(program, argv, envp);
  _exit(127);
}

// Held shared by each Spawn() from fork() until its child has closed what
// it inherited; NoSpawnInFlight holds it exclusively.
std::shared_mutex& SpawnWindow() {
  static std::shared_mutex window;
  return window;
}

int OpenOutput(const std::string& path, bool append) {
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  return open(path.c_str(), flags, 0644);
}

}  // namespace

Result<UserIds> LookupUser(const std::string& name) {
  struct passwd pw {};
  struct passwd* found = nullptr;
  std::vector<char> buf(16384);
  if (getpwnam_r(name.c_str(), &pw, buf.data(), buf.size(), &found) != 0 || found == nullptr) {
    return Status::NotFound("no such user: " + name);
  }
  return UserIds{pw.pw_uid, pw.pw_gid, pw.pw_dir != nullptr ? pw.pw_dir : "/"};
}

bool RunningAsRoot() { return geteuid() == 0; }

Result<pid_t> Spawn(const SpawnOptions& o) {
  if (o.argv.empty()) return Status::Internal("Spawn: empty argv");
  Result<std::string> program = ResolveProgram(o.argv[0]);
  if (!program.ok()) return program.status();

  // Everything the child needs, built before fork.
  std::vector<char*> argv;
  for (const std::string& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    std::string entry(*e);
    std::string key = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const std::string& x : o.extra_env) {
      if (x.substr(0, x.find('=')) == key) overridden = true;
    }
    if (!overridden) env_storage.push_back(std::move(entry));
  }
  for (const std::string& x : o.extra_env) env_storage.push_back(x);
  std::vector<char*> envp;
  envp.reserve(env_storage.size() + 1);
  for (std::string& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  int in_fd = open(o.stdin_path.empty() ? "/dev/null" : o.stdin_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (in_fd < 0) return Status::Infra(ErrnoText("open " + o.stdin_path));
  int out_fd = -1;
  int err_fd = -1;
  if (!o.stdout_path.empty()) {
    out_fd = OpenOutput(o.stdout_path, o.append_output);
    if (out_fd < 0) {
      close(in_fd);
      return Status::Infra(ErrnoText("open " + o.stdout_path));
    }
  }
  if (!o.stderr_path.empty()) {
    err_fd = o.stderr_path == o.stdout_path ? out_fd : OpenOutput(o.stderr_path, o.append_output);
    if (err_fd < 0) {
      close(in_fd);
      if (out_fd >= 0) close(out_fd);
      return Status::Infra(ErrnoText("open " + o.stderr_path));
    }
  }

  // The child's close_range() closes its end of `closed`, with everything
  // else it inherited: reading end of file here means the child holds none
  // of our descriptors any more (or has died).
  int closed[2];
  if (pipe2(closed, O_CLOEXEC) != 0) {
    close(in_fd);
    if (out_fd >= 0) close(out_fd);
    if (err_fd >= 0 && err_fd != out_fd) close(err_fd);
    return Status::Infra(ErrnoText("pipe2"));
  }
  std::shared_lock<std::shared_mutex> window(SpawnWindow());
  pid_t pid = fork();
  if (pid == 0) ExecChild(o, program->c_str(), argv.data(), envp.data(), in_fd, out_fd, err_fd);
  int fork_errno = errno;
  close(closed[1]);
  if (pid > 0) {
    char byte = 0;
    while (read(closed[0], &byte, 1) < 0 && errno == EINTR) {
    }
  }
  window.unlock();
  close(closed[0]);
  close(in_fd);
  if (out_fd >= 0) close(out_fd);
  if (err_fd >= 0 && err_fd != out_fd) close(err_fd);
  if (pid < 0) {
    errno = fork_errno;
    return Status::Infra(ErrnoText("fork"));
  }
  return pid;
}

NoSpawnInFlight::NoSpawnInFlight() : lock_(SpawnWindow()) {}

std::optional<ExitStatus> PollExit(pid_t pid) {
  int ws = 0;
  pid_t r = waitpid(pid, &ws, WNOHANG);
  if (r == pid) return FromWaitStatus(ws);
  return std::nullopt;
}

Result<ExitStatus> WaitForExit(pid_t pid, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int ws = 0;
    pid_t r = waitpid(pid, &ws, WNOHANG);
    if (r == pid) return FromWaitStatus(ws);
    if (r < 0) return Status::Infra(ErrnoText("waitpid " + std::to_string(pid)));
    if (std::chrono::steady_clock::now() >= deadline) {
      return Status::Infra("process " + std::to_string(pid) + " still running after " +
                           std::to_string(timeout.count()) + "ms");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  int ws = 0;
  if (waitpid(pid, &ws, WNOHANG) == pid) return false;  // our child, now reaped
  if (kill(pid, 0) != 0) return errno == EPERM;
  // A zombie that is not ours still "exists"; look at its state.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (std::getline(stat, line)) {
    size_t close_paren = line.rfind(')');
    if (close_paren != std::string::npos && close_paren + 2 < line.size() &&
        line[close_paren + 2] == 'Z') {
      return false;
    }
  }
  return true;
}

Status StopProcess(pid_t pid, int sig, std::chrono::milliseconds grace) {
  if (pid <= 0) return Status::Ok();
  if (!ProcessAlive(pid)) return Status::Ok();
  if (kill(pid, sig) != 0 && errno == ESRCH) return Status::Ok();
  auto deadline = std::chrono::steady_clock::now() + grace;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!ProcessAlive(pid)) return Status::Ok();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  kill(pid, SIGKILL);
  for (int i = 0; i < 250 && ProcessAlive(pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (ProcessAlive(pid))
    return Status::Infra("process " + std::to_string(pid) + " survived SIGKILL");
  return Status::Ok();
}

Result<CommandOutput> RunCommand(SpawnOptions options, const std::string& input,
                                 std::chrono::milliseconds timeout) {
  std::filesystem::path dir;
  {
    char tmpl[] = "/tmp/msgx-cmd-XXXXXX";
    if (mkdtemp(tmpl) == nullptr) return Status::Infra(ErrnoText("mkdtemp"));
    dir = tmpl;
  }
  struct Cleanup {
    std::filesystem::path d;
    ~Cleanup() {
      std::error_code ec;
      std::filesystem::remove_all(d, ec);
    }
  } cleanup{dir};
  // The child may run as another user: let it read and write its files.
  chmod(dir.c_str(), 0777);
  options.stdin_path = (dir / "in").string();
  options.stdout_path = (dir / "out").string();
  options.stderr_path = (dir / "err").string();
  options.append_output = false;
  {
    std::ofstream in(options.stdin_path, std::ios::binary);
    in << input;
    if (!in) return Status::Infra("RunCommand: cannot write " + options.stdin_path);
  }
  Result<pid_t> pid = Spawn(options);
  if (!pid.ok()) return pid.status();
  Result<ExitStatus> status = WaitForExit(*pid, timeout);
  if (!status.ok()) {
    kill(*pid, SIGKILL);
    (void)WaitForExit(*pid, std::chrono::seconds(5));
    return Status::Infra(options.argv[0] + ": " + status.status().message());
  }
  CommandOutput result;
  result.status = *status;
  Result<std::string> out = ReadFileToString(options.stdout_path);
  Result<std::string> err = ReadFileToString(options.stderr_path);
  if (out.ok()) result.out = std::move(*out);
  if (err.ok()) result.err = std::move(*err);
  return result;
}

Result<int> FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::Infra(ErrnoText("socket"));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    Status s = Status::Infra(ErrnoText("bind 127.0.0.1:0"));
    close(fd);
    return s;
  }
  close(fd);
  return static_cast<int>(ntohs(addr.sin_port));
}

bool LoopbackPortOpen(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  bool open = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return open;
}

Result<std::string> ReadFileToString(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot read " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace msgx
