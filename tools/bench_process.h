// BenchProcess: the `msgx run` child of `msgx bench`, and what /proc says
// about it.
//
// Start(): fork + exec of `argv` (argv[0] a path) with the bench's own
//   environment plus `extra_env`, stdout and stderr appended to `log_path`.
// Alive(): false once the child has exited (its status is then kept).
// Terminate(): SIGTERM, then waits up to `grace`; SIGKILL after that (and
//   the result says so). Returns the exit status as `msgx run` reported it.
// Sample(): CPU seconds used so far (utime + stime of /proc/<pid>/stat) and
//   the peak resident set (VmHWM of /proc/<pid>/status, bytes).
//
// Thread-safety: one thread drives one instance.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/status.h"

namespace msgx::app {

struct ProcSample {
  double cpu_seconds = 0;
  std::int64_t peak_rss_bytes = 0;
};

struct ChildExit {
  int code = -1;        // exit code, or -1 when killed by a signal
  int signal = 0;       // the signal that ended it, else 0
  bool killed = false;  // we had to SIGKILL it after the grace period
  std::string ToString() const;
};

// Parses the text of /proc/<pid>/stat and /proc/<pid>/status; pure.
std::optional<ProcSample> ParseProc(const std::string& stat, const std::string& status,
                                    long ticks_per_second);

class BenchProcess {
 public:
  BenchProcess() = default;
  ~BenchProcess();
  BenchProcess(const BenchProcess&) = delete;
  BenchProcess& operator=(const BenchProcess&) = delete;

  Status Start(const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& extra_env, const std::string& log_path);
  bool Alive();
  std::optional<ProcSample> Sample() const;
  ChildExit Terminate(std::chrono::seconds grace);
  // Waits for a child that exits by itself (e.g. `msgx migrate`).
  ChildExit Wait();
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::optional<ChildExit> exit_;
};

}  // namespace msgx::app
