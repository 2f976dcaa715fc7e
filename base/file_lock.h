// FileLock: an exclusive advisory lock on a file (flock), held for the life of
// the object. `msgx run` takes `<state.dir>/LOCK.msgx` before anything else
// (docs/commit-protocol.md#single-writer). The kernel drops the lock when the
// process dies, however it dies, so a successor takes over at once.
//
// The holder writes its pid into the file, so a waiter can say who holds it.
//
// Thread-safety: a FileLock is owned by one thread; distinct FileLocks on the
// same path conflict even within one process (flock is per open file).
#pragma once

#include <memory>
#include <string>

#include "base/result.h"

namespace msgx {

class FileLock {
 public:
  // Takes the lock without waiting. kInfra "held by pid N" when another
  // holder has it; kInfra for I/O errors.
  static Result<std::unique_ptr<FileLock>> TryAcquire(const std::string& path);
  ~FileLock();  // releases
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  explicit FileLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace msgx
