// DiskReserve: the free space msgx keeps on the state.dir file system.
//
// RocksDB must never meet a full disk in a write of ours: the Debian build
// of RocksDB 7.8 has its assertions on, and when it recovers from a failed
// WAL append (its own auto-recovery, or DB::Resume) it flushes the failed
// WAL writer again and aborts the process
// (`WritableFileWriter::AssertFalseAndGetStatusForPrevError`). So the log
// and the state store check the reserve before every write and refuse it
// as an outage while less than the reserve is free: the stage stalls, with
// the figures in its reason, and goes on by itself once space is back
// (docs/operations.md#error-classes). The reserve also covers what RocksDB
// writes in the background (memtable flushes, compactions), whose failures
// it recovers from without aborting.
//
// Thread-safe: Check() only reads the file system.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "base/status.h"

namespace msgx {

class DiskReserve {
 public:
  // Keeps `min_free_bytes` available on the file system that holds `dir`.
  DiskReserve(std::string dir, std::uintmax_t min_free_bytes);

  // kInfra "state.dir has N MiB free, less than the M MiB msgx keeps free"
  // while less is available; OK otherwise. OK when the file system cannot
  // be asked (the write itself then says what is wrong).
  Status Check() const;

  // The bytes available to msgx on that file system now (statvfs), or
  // nullopt when it cannot be asked.
  std::optional<std::uintmax_t> Available() const;

 private:
  std::string dir_;
  std::uintmax_t min_free_bytes_;
};

}  // namespace msgx
