// Subprocess: starting and stopping the outside programs msgx drives for
// local services and tests (initdb, postgres, redis-server, psql, itself).
//
// Spawn() forks and execs with everything prepared before fork(), so that
// only async-signal-safe calls run in the child; it is safe to call from a
// process that has other threads (librdkafka's, spdlog's).
//
// Running as another user: when SpawnOptions::run_as is set, the child drops
// to that uid/gid (with no supplementary groups) before exec. Only root may
// do that; PostgreSQL refuses to run as root, so msgx runs it as `postgres`.
//
// Thread-safety: all functions may be called from any thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"

namespace msgx {

struct UserIds {
  uid_t uid = 0;
  gid_t gid = 0;
  std::string home;
};

// The ids of a local account, e.g. "postgres"; kNotFound if there is none.
Result<UserIds> LookupUser(const std::string& name);

// True when the effective user is root.
bool RunningAsRoot();

struct SpawnOptions {
  // argv[0] is looked up in PATH when it has no '/'.
  std::vector<std::string> argv;
  // Files for the standard streams; empty = /dev/null for stdin, inherited
  // for stdout/stderr. Output files are created, and truncated unless
  // append_output. stderr_path == stdout_path shares one file.
  std::string stdin_path;
  std::string stdout_path;
  std::string stderr_path;
  bool append_output = false;
  // Directory the child starts in; empty = inherited.
  std::string working_dir;
  // Drop to this user before exec (requires root).
  std::optional<UserIds> run_as;
  // setsid(): the child leaves our session and process group, so that it
  // outlives the terminal and our own signals (detached daemons).
  bool new_session = false;
  // prctl(PR_SET_PDEATHSIG): the signal the child gets when the spawning
  // thread dies, even by SIGKILL. 0 = none. Tests use it so that a killed
  // test binary never leaves a server running.
  int parent_death_signal = 0;
  // Extra NAME=VALUE environment entries (added to, or replacing, ours).
  std::vector<std::string> extra_env;
};

// Starts the program; returns its pid. The caller reaps it (WaitForExit or
// StopProcess) unless it is detached with new_session and left to run.
// Returns only once the child has closed the descriptors it inherited
// (see NoSpawnInFlight).
Result<pid_t> Spawn(const SpawnOptions& options);

// From fork() until its first steps close them, a child holds a copy of
// every descriptor of ours, close-on-exec or not. A listening socket closed
// by another thread in that window stays open, and listening, in the child,
// so binding its port again fails with EADDRINUSE. While a NoSpawnInFlight
// lives, no Spawn() of this process is in that window: it waits for those
// in it and holds new ones back. Take it around closing a listener whose
// port is bound again at once (librdkafka's mock broker going down, in
// tests; docs/testing.md#the-kafka-mock-and-spawned-children).
class NoSpawnInFlight {
 public:
  NoSpawnInFlight();

 private:
  std::unique_lock<std::shared_mutex> lock_;
};

// How a child ended: exit code, or -signal when killed by a signal.
struct ExitStatus {
  int code = 0;
  bool ok() const { return code == 0; }
};

// Reaps a child of ours, waiting up to `timeout`; kInfra on timeout.
Result<ExitStatus> WaitForExit(pid_t pid, std::chrono::milliseconds timeout);

// Reaps a child without blocking: the status if it has exited, nullopt if it
// still runs (or is not our child).
std::optional<ExitStatus> PollExit(pid_t pid);

// True if a process with this pid exists (and is not a zombie of ours).
bool ProcessAlive(pid_t pid);

// Sends `sig`, waits up to `grace` for the process to go, then SIGKILLs it.
// Works for our children (reaped) and for other processes (polled). OK if
// the process was already gone.
Status StopProcess(pid_t pid, int sig, std::chrono::milliseconds grace);

struct CommandOutput {
  ExitStatus status;
  std::string out;
  std::string err;
};

// Runs a program to completion, feeding `input` to its stdin and capturing
// stdout and stderr. The std{in,out,err}_path fields of `options` are
// ignored. kInfra if it cannot be started or outlives `timeout` (it is
// killed then); a non-zero exit is returned as a value, not an error.
Result<CommandOutput> RunCommand(SpawnOptions options, const std::string& input = "",
                                 std::chrono::milliseconds timeout = std::chrono::minutes(2));

// A TCP port on 127.0.0.1 that was free a moment ago (bind port 0 and read
// it back). Another process may take it before the caller binds it; callers
// that start servers retry with a fresh port when the bind fails.
Result<int> FreeLoopbackPort();

// True if something accepts TCP connections on 127.0.0.1:port.
bool LoopbackPortOpen(int port);

// Reads a whole file; kNotFound if it does not exist.
Result<std::string> ReadFileToString(const std::string& path);

}  // namespace msgx
