#include "tools/bench_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace msgx::app {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

ChildExit FromStatus(int status) {
  ChildExit e;
  if (WIFEXITED(status)) e.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) e.signal = WTERMSIG(status);
  return e;
}

}  // namespace

std::string ChildExit::ToString() const {
  if (signal != 0) {
    return std::string("killed by signal ") + std::to_string(signal) +
           (killed ? " (did not stop within the grace period)" : "");
  }
  return "exit status " + std::to_string(code);
}

std::optional<ProcSample> ParseProc(const std::string& stat, const std::string& status,
                                    long ticks_per_second) {
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, utime 14, stime 15.
  const std::size_t close = stat.rfind(')');
  if (close == std::string::npos || ticks_per_second <= 0) return std::nullopt;
  std::istringstream in(stat.substr(close + 1));
  std::string field;
  long long utime = -1, stime = -1;
  for (int i = 3; i <= 15 && (in >> field); ++i) {
    if (i == 14) utime = std::atoll(field.c_str());
    if (i == 15) stime = std::atoll(field.c_str());
  }
  if (utime < 0 || stime < 0) return std::nullopt;
  ProcSample s;
  s.cpu_seconds = static_cast<double>(utime + stime) / static_cast<double>(ticks_per_second);
  const std::size_t hwm = status.find("VmHWM:");
  if (hwm != std::string::npos) {
    s.peak_rss_bytes = std::atoll(status.c_str() + hwm + 6) * 1024;  // "VmHWM:  1234 kB"
  }
  return s;
}

BenchProcess::~BenchProcess() {
  if (pid_ > 0 && !exit_) (void)Terminate(std::chrono::seconds(30));
}

Status BenchProcess::Start(const std::vector<std::string>& argv,
                           const std::map<std::string, std::string>& extra_env,
                           const std::string& log_path) {
  const int fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Config("cannot open " + log_path + ": " + std::strerror(errno));
  // Everything the child needs is built before fork(): the bench has
  // threads, so the child may only call async-signal-safe functions.
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string kv = *e;
    if (extra_env.count(kv.substr(0, kv.find('='))) == 0) env_strings.push_back(kv);
  }
  for (const auto& [k, v] : extra_env) {
    std::string kv = k;
    kv += '=';
    kv += v;
    env_strings.push_back(std::move(kv));
  }
  std::vector<char*> envp;
  envp.reserve(env_strings.size() + 1);
  for (std::string& kv : env_strings) envp.push_back(kv.data());
  envp.push_back(nullptr);
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return Status::Infra(std::string("fork: ") + std::strerror(errno));
  }
  if (pid == 0) {
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    ::execve(args[0], args.data(), envp.data());
    ::_exit(127);
  }
  ::close(fd);
  pid_ = pid;
  exit_.reset();
  return Status::Ok();
}

bool BenchProcess::Alive() {
  if (pid_ <= 0 || exit_) return false;
  int status = 0;
  if (::waitpid(pid_, &status, WNOHANG) == pid_) {
    exit_ = FromStatus(status);
    return false;
  }
  return true;
}

std::optional<ProcSample> BenchProcess::Sample() const {
  if (pid_ <= 0 || exit_) return std::nullopt;
  const std::string base = "/proc/" + std::to_string(pid_);
  return ParseProc(ReadFile(base + "/stat"), ReadFile(base + "/status"), ::sysconf(_SC_CLK_TCK));
}

ChildExit BenchProcess::Terminate(std::chrono::seconds grace) {
  if (pid_ <= 0) return ChildExit{};
  if (exit_) return *exit_;
  ::kill(pid_, SIGTERM);
  const auto deadline = std::chrono::steady_clock::now() + grace;
  int status = 0;
  while (std::chrono::steady_clock::now() < deadline) {
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_ = FromStatus(status);
      return *exit_;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, &status, 0);
  exit_ = FromStatus(status);
  exit_->killed = true;
  return *exit_;
}

ChildExit BenchProcess::Wait() {
  if (pid_ <= 0) return ChildExit{};
  if (exit_) return *exit_;
  int status = 0;
  ::waitpid(pid_, &status, 0);
  exit_ = FromStatus(status);
  return *exit_;
}

}  // namespace msgx::app
