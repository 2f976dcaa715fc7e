// LogStore: the ordered log, msgx's system of record
// (docs/commit-protocol.md#two-rocksdb-stores). Its own RocksDB directory,
// `<state.dir>/log`.
//
// Guarantees:
//   - Append-only and dense: records get offsets 0, 1, 2, … in append order,
//     and a record is never changed or removed.
//   - Every append is ONE synced RocksDB WriteBatch (WriteOptions.sync): the
//     records together with the capture progress (watermark, skipped and
//     aged-out id ranges) or the msgx_command ids they came from. After a
//     crash at any point a batch is either wholly there or wholly absent.
//   - Append times never decrease along the log: a record gets
//     max(clock now, previous record's append time).
//   - The log has a UUID, created on first open and stored in the log; other
//     stores (state, Redis, PostgreSQL `pipeline`) record it to refuse a
//     different log.
//   - Only one LogStore may have a directory open (RocksDB's LOCK file); a
//     second Open() fails with kInfra. Read-only tools use LogReader.
//
// Thread-safety: all methods may be called from any thread; appends are
// serialised by an internal mutex. Iterators are per-thread.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "state/capture_progress.h"
#include "state/disk_reserve.h"
#include "state/log_cursor.h"
#include "state/log_iterator.h"
#include "state/log_layout.h"
#include "state/log_record.h"
#include "state/store_memory.h"

namespace msgx {

// How far the host clock may run ahead of the steady clock between two
// appends before the log stops following it (LogStore::AppendTime).
inline constexpr MicrosSinceEpoch kClockJumpToleranceMicros = 60'000'000;

class LogStore {
 public:
  // Opens (creating it and its parents if missing) the log at `dir`. `clock` stamps append
  // times; REQUIRES: clock outlives the store. `env` (tests: an injected
  // full disk) defaults to EnvWithSignalStacks() (state/rocksdb_threads.h);
  // REQUIRES: it outlives the store.
  static Result<std::unique_ptr<LogStore>> Open(const std::string& dir, Clock* clock,
                                                rocksdb::Env* env = nullptr);
  // Closes the database. Nothing needs a clean close: every append is synced.
  ~LogStore();
  LogStore(const LogStore&) = delete;
  LogStore& operator=(const LogStore&) = delete;

  // From now on every append first checks `reserve` (state/disk_reserve.h)
  // and fails with its kInfra, writing nothing, while too little is free.
  // Null: no check. REQUIRES: called before the store is shared between
  // threads; `reserve` outlives the store.
  void set_reserve(const DiskReserve* reserve) { reserve_ = reserve; }

  const std::string& log_uuid() const { return log_uuid_; }
  // The offset the next record gets; also the number of records.
  std::uint64_t next_offset() const;
  // The last record's offset, or nullopt for an empty log.
  std::optional<std::uint64_t> last_offset() const;
  // The capture progress last appended, or nullopt before capture first ran.
  std::optional<CaptureProgress> capture_progress() const;
  // The highest msgx_command id appended so far (0 if none).
  std::int64_t last_command_id() const;
  // The offset of the last SETTINGS record (docs/fold.md#settings-in-the-log),
  // or nullopt when the log holds none.
  std::optional<std::uint64_t> last_settings_offset() const;
  // The offset of the record appended for msgx_command `command_id`, if any.
  Result<std::optional<std::uint64_t>> CommandOffset(std::int64_t command_id) const;
  // The command index (state/log_layout.h, docs/fold.md#the-command-index):
  // every append indexes its command records in the same WriteBatch, and
  // Open() indexes the records an older msgx appended, so upto is the log's
  // end.
  Result<log_layout::CommandIndex> CommandIndex() const;

  // What the log holds in memory besides the shared block cache
  // (state/store_memory.h). Any thread.
  StoreMemory Memory() const;

  // Appends `records` (possibly none) and replaces the capture progress with
  // `progress`, in one synced WriteBatch. Returns the first new offset.
  // On failure nothing is written and the store is unchanged.
  // REQUIRES: the watermark does not move back (kInternal otherwise).
  Result<std::uint64_t> Append(std::span<const LogRecordData> records,
                               const CaptureProgress& progress);

  // Appends command records in one synced WriteBatch. Each record whose
  // command_id is non-zero is indexed (CommandOffset) in the same batch, so a
  // crash between this append and marking msgx_command can be detected, and
  // a scheduled job (negative ids) can tell whether its day's run is in.
  // REQUIRES: every record is a COMMAND. Returns the first new offset.
  Result<std::uint64_t> AppendCommands(std::span<const LogRecordData> records);

  // Records a reading of an independent clock, the mailbox server's now()
  // (capture reads it, docs/fold.md#the-folds-clock): from then on, append
  // times stay within kClockJumpTolerance of that reading plus the steady
  // clock's time since, so that a jump of the host clock while msgx was
  // stopped cannot pin the log's time in the future either.
  void ObserveReferenceClock(MicrosSinceEpoch reference_now);

  // Reads from `from` up to (excluding) `to`, as of now.
  std::unique_ptr<LogIterator> NewIterator(
      std::uint64_t from, std::uint64_t to = std::numeric_limits<std::uint64_t>::max()) const;
  // Appends up to `max` entries with offset >= from to *out.
  Status Read(std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) const;
  // A cursor for a thread that reads the log step after step (the fold's).
  // REQUIRES: the store outlives it.
  std::unique_ptr<LogCursor> NewCursor() const;

 private:
  const DiskReserve* reserve_ = nullptr;
  LogStore(std::unique_ptr<rocksdb::DB> db, Clock* clock);
  // The append time of the next records (docs/fold.md#the-folds-clock):
  // the wall clock, never below the last append time, and never further
  // ahead than kClockJumpTolerance of the last append plus the steady
  // clock's time since, nor of the last reference reading plus the steady
  // clock's time since, so that a forward jump of the host's clock cannot
  // pin the fold's "now" in the future. REQUIRES: mu_ held.
  MicrosSinceEpoch AppendTime() const;
  // Indexes the command records an older msgx appended without indexing
  // them, from command_index_upto_ to the end, in one WriteBatch.
  Status IndexCommands();
  // Puts the records into *batch, stamped `t`, with their command index
  // entries; REQUIRES: mu_ held.
  void PutRecords(std::span<const LogRecordData> records, std::uint64_t first, MicrosSinceEpoch t,
                  rocksdb::WriteBatch* batch) const;
  // After a commit of records stamped `t`. REQUIRES: mu_ held.
  void Appended(MicrosSinceEpoch t);
  // After a commit of `count` records from offset `first` stamped `t`: the
  // next offset, the command index's upto, and Appended(t) for any records.
  // REQUIRES: mu_ held.
  void Advanced(std::uint64_t first, std::size_t count, MicrosSinceEpoch t);
  Status Commit(rocksdb::WriteBatch* batch);

  std::unique_ptr<rocksdb::DB> db_;
  Clock* const clock_;
  std::string log_uuid_;

  mutable std::mutex mu_;
  std::uint64_t next_offset_ = 0;            // guarded by mu_
  MicrosSinceEpoch last_append_micros_ = 0;  // guarded by mu_
  // The steady clock at the last append of this process; -1 before one.
  std::int64_t last_append_mono_ = -1;  // guarded by mu_
  // The last reference reading and the steady clock then; -1: none.
  MicrosSinceEpoch reference_micros_ = -1;             // guarded by mu_
  std::int64_t reference_mono_ = -1;                   // guarded by mu_
  bool clock_bounded_ = false;                         // guarded by mu_: logging the jump once
  std::optional<CaptureProgress> capture_;             // guarded by mu_
  std::int64_t last_command_id_ = 0;                   // guarded by mu_
  std::optional<std::uint64_t> last_settings_offset_;  // guarded by mu_
  // Every command record below this offset is in the command index.
  std::uint64_t command_index_upto_ = 0;  // guarded by mu_
};

// The RocksDB options the log uses, shared with LogReader.
rocksdb::Options LogStoreOptions();

}  // namespace msgx
