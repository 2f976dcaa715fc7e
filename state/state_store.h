// StateStore: the state RocksDB (`<state.dir>/state`,
// docs/commit-protocol.md#two-rocksdb-stores), derived from the log by the
// fold.
//
// Column families and keys:
//   flights      FLID                              → fbstate.Flight
//   flight_sodt  be64(SODT ^ sign bit) FLID        → "" (index for windows)
//   reference    TYPE \0 KEY                       → fbstate.Reference
//   identity     "k" KEY                           → fbstate.Binding
//                "t" be64(bound ^ sign) KEY        → "" (expiry index)
//                "s" SNDR                          → fbstate.Sender
//   outcomes     be64(mailbox id)                  → fbstate.Outcome
//   meta         "applied"     be64 applied offset (absent: nothing folded)
//                "generation"  be64 snapshot generation
//                "fold_version" be64
//                "digest"      32-byte chained digest at "applied"
//                "batch/" be64(end offset) → be64(fold version) + digest
//                "batch/pending/" be64(first offset) → be64(last offset) +
//                    be64(last append micros): the pending batches' index,
//                    so pruning and listing them reads no batch (megabytes
//                    each); "batch/pending-index" = "1" once it is complete
//                    (a store written before it is indexed when next opened
//                    writable; until then listing reads the batches). Keys
//                    of another length than the batch ends': an older msgx
//                    skips them
//                "batch/outcome-counts" → OutcomeCounts, stamped with the
//                    applied offset they are exact at (state/outcome_counts.h):
//                    written with every batch's outcomes, so that counting
//                    them does not read them all; a store without it is
//                    counted once when next opened writable
//   pending      be64(first offset)                → PendingBatch (schemas/
//                pending.fbs): what PostgreSQL and Redis must receive for
//                the batch, written with it, pruned by PrunePending()
//
// Commit() writes one BatchWrite as ONE synced RocksDB WriteBatch: a fold
// batch is all or nothing. RocksDB errors become kInfra here.
//
// Thread-safety: reads are safe from any thread; Commit() from the single
// writer only.
#pragma once

#include <rocksdb/options.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "state/disk_reserve.h"
#include "state/flight.h"
#include "state/outcome.h"
#include "state/outcome_counts.h"
#include "state/pending_batch.h"
#include "state/state_view.h"
#include "state/store_memory.h"

namespace rocksdb {
class DB;
class Env;
class ColumnFamilyHandle;
class Iterator;
class Snapshot;
class WriteBatch;
}  // namespace rocksdb

namespace msgx {

struct StateMeta {
  std::int64_t applied_offset = -1;  // -1: nothing folded yet
  std::int64_t generation = 0;
  std::int64_t fold_version = 0;
  std::string digest;  // empty when nothing folded
  bool operator==(const StateMeta&) const = default;
};

// Everything one fold batch changes. nullopt values are deletes.
struct BatchWrite {
  std::map<std::string, std::shared_ptr<const Flight>> flights;  // nullptr: delete
  std::map<std::pair<std::string, std::string>, std::optional<ReferenceRecord>> references;
  std::map<std::string, std::optional<IdentityBinding>> bindings;
  std::map<std::string, SenderSeqn> senders;
  std::map<std::int64_t, Outcome> outcomes;
  // The SODT each flight in `flights` had in the store before this batch,
  // where the writer knows it (nullopt: absent, or no time SODT). A flight
  // not listed here is read back from the store for its old SODT index
  // entry. REQUIRES: exact; a wrong entry leaves a wrong index entry.
  std::map<std::string, std::optional<MicrosSinceEpoch>> old_sodts;
  StateMeta meta;                       // written whole; meta.applied_offset is the batch end
  std::optional<PendingBatch> pending;  // stored under its first offset
  bool empty() const {
    return flights.empty() && references.empty() && bindings.empty() && senders.empty() &&
           outcomes.empty();
  }
};

// The options StateStore::Open gives column family `name`: its table blocks
// through the shared block cache (state/store_memory.h), and the identity
// family's filters and insert hints. For whatever opens the store's files
// itself (a test compacting them), so that it writes them as the store does.
rocksdb::ColumnFamilyOptions StateStoreFamilyOptions(std::string_view name);

class StateStore final : public StateView {
 public:
  struct Options {
    bool sync = true;        // fsync each batch (tests may turn it off)
    bool read_only = false;  // open read-only (inspect, status)
    // RocksDB's Env (tests: an injected full disk); REQUIRES: outlives the
    // store. Null: EnvWithSignalStacks() (state/rocksdb_threads.h).
    rocksdb::Env* env = nullptr;
    // Checked before every write, which fails with its kInfra and writes
    // nothing while too little is free (state/disk_reserve.h). Null: no
    // check. REQUIRES: outlives the store.
    const DiskReserve* reserve = nullptr;
    // false: writes skip RocksDB's write-ahead log, and closing does not
    // flush the memtables. Only for a scratch store that is thrown away
    // after use (`msgx refold`): a crash or a close loses its last writes,
    // which nobody reads again.
    bool wal = true;
    // The write-ahead logs kept, at most about this many bytes: past it
    // RocksDB flushes the column families that pin the oldest log. With
    // RocksDB's default (4 × the memtables of all eight column families,
    // 4 GiB) a quiet column family kept every log since its last flush:
    // 500 MB after 1,000,000 messages, replayed by every open
    // (docs/commit-protocol.md#the-write-ahead-log).
    std::uint64_t max_wal_bytes = 128ULL << 20;
  };

  // Opens (creating when absent and not read-only) the store at `path`.
  static Result<std::unique_ptr<StateStore>> Open(const std::string& path, Options options);
  ~StateStore() override;
  StateStore(const StateStore&) = delete;
  StateStore& operator=(const StateStore&) = delete;

  // StateView.
  Result<std::optional<Flight>> GetFlight(std::string_view flid) const override;
  Result<std::vector<std::string>> FlightsBySodt(MicrosSinceEpoch from,
                                                 MicrosSinceEpoch to) const override;
  Result<std::optional<ReferenceRecord>> GetReference(std::string_view type,
                                                      std::string_view key) const override;
  Result<std::vector<std::string>> ReferenceKeys(std::string_view type) const override;

  Result<std::optional<IdentityBinding>> GetBinding(std::string_view key) const;
  // Bindings bound before `micros`, in (bound time, key) order.
  Result<std::vector<IdentityBinding>> BindingsBoundBefore(MicrosSinceEpoch micros) const;

  // What the store holds in memory besides the shared block cache, over all
  // its column families (state/store_memory.h). Any thread.
  StoreMemory Memory() const;
  Result<std::optional<SenderSeqn>> GetSender(std::string_view sndr) const;
  Result<std::optional<Outcome>> GetOutcome(std::int64_t mailbox_id) const;
  Result<StateMeta> ReadMeta() const;
  // Calls fn for every flight, in FLID order, from one consistent snapshot,
  // and returns that snapshot's meta (a mirror rebuild: the flights are
  // exactly the state at meta.applied_offset). Stops at fn's first error.
  Result<StateMeta> ForEachFlight(const std::function<Status(const Flight&)>& fn) const;
  // (batch end offset, fold version, digest) of every committed batch.
  struct BatchEnd {
    std::int64_t end_offset = 0;
    std::int64_t fold_version = 0;
    std::string digest;
  };
  Result<std::vector<BatchEnd>> BatchEnds() const;

  // The pending batch whose range holds `offset`, or nullopt (never written
  // or pruned).
  Result<std::optional<PendingBatch>> PendingCovering(std::int64_t offset) const;
  // (first, last) of every stored pending batch, ascending.
  Result<std::vector<std::pair<std::int64_t, std::int64_t>>> PendingRanges() const;
  // Deletes the pending batches ending at or before `upto` whose last record
  // was appended before `appended_before`; returns how many.
  Result<int> PrunePending(std::int64_t upto, MicrosSinceEpoch appended_before);

  // Calls fn for every outcome, in mailbox-id order (`msgx replay --class`).
  Status ForEachOutcome(const std::function<void(const Outcome&)>& fn) const;
  // The outcomes counted per state and DEAD class, as the store keeps them
  // (without reading the outcomes); nullopt when it keeps none that are
  // exact at its applied offset (a store an older msgx wrote last, opened
  // read-only): then CountOutcomes() counts them by reading.
  Result<std::optional<OutcomeCounts>> CountedOutcomes() const;
  // The outcome counts (`msgx status`): the kept ones, or, where there are
  // none that are current, counted by reading every outcome.
  Result<OutcomeCounts> CountOutcomes() const;

  // Writes `batch` atomically (one WriteBatch, synced per Options).
  Status Commit(const BatchWrite& batch);

  // Calls fn(column family name, key, value) for every entry of every
  // column family except meta's "batch/" entries (batch ends, the pending
  // index) and the pending batches
  // (pruned on their own schedule), in key order: the
  // canonical content of state (equal for equal fold results).
  Status ForEachEntry(
      const std::function<void(std::string_view, std::string_view, std::string_view)>& fn) const;

  // What ForEachEntry visits, in the same order, one entry at a time, so
  // that two stores can be compared in one pass and bounded memory: column
  // families in a fixed order (cf_index()), keys ascending within each.
  // REQUIRES: the store outlives the cursor.
  class EntryCursor {
   public:
    ~EntryCursor();
    EntryCursor(const EntryCursor&) = delete;
    EntryCursor& operator=(const EntryCursor&) = delete;
    bool Valid() const;
    void Next();
    std::size_t cf_index() const { return cf_; }
    std::string_view cf() const;
    std::string_view key() const;
    std::string_view value() const;
    // OK at the end of the walk; why it ended early otherwise.
    Status status() const { return status_; }

   private:
    friend class StateStore;
    explicit EntryCursor(const StateStore* store);
    // Moves to the first entry to visit at or after the current position.
    void Settle();
    const StateStore* store_;
    std::size_t cf_ = 0;
    std::size_t end_cf_ = kColumnFamilies;
    std::unique_ptr<rocksdb::Iterator> it_;
    Status status_;
  };

  // A cursor on the first entry (or not Valid() when there is none); with
  // [first_cf, end_cf), on the column families of those indexes only
  // (cf_index(): the walk's order), so that two threads can walk one store
  // in two parts.
  static constexpr std::size_t kColumnFamilies = 8;
  // The name of column family `i` < kColumnFamilies, in that order (the
  // table at the top of this file).
  static std::string_view ColumnFamilyName(std::size_t i);
  std::unique_ptr<EntryCursor> NewEntryCursor(std::size_t first_cf = 0,
                                              std::size_t end_cf = kColumnFamilies) const;

 private:
  StateStore() = default;
  // `snapshot` null: the latest state.
  Result<std::optional<std::string>> Get(rocksdb::ColumnFamilyHandle* cf, std::string_view key,
                                         const rocksdb::Snapshot* snapshot = nullptr) const;
  Result<StateMeta> ReadMetaAt(const rocksdb::Snapshot* snapshot) const;
  // The pending batches' (first, last, last append micros), ascending by
  // first offset, stopping after the first whose last offset exceeds
  // `upto`: from the index, or from the batches themselves in a store not
  // indexed yet.
  struct PendingEntry {
    std::int64_t first = 0;
    std::int64_t last = 0;
    MicrosSinceEpoch last_append = 0;
  };
  Result<std::vector<PendingEntry>> ListPending(std::int64_t upto) const;
  // The same, read from the stored batches themselves (no index): the
  // fallback of ListPending and the source of IndexPending.
  Result<std::vector<PendingEntry>> ReadPendingBatches(std::int64_t upto) const;
  // Writes `wb` with the store's sync and WAL options; kInfra naming
  // `what` on failure.
  Status Write(rocksdb::WriteBatch* wb, std::string_view what);
  // Writes the index of a store written before it (see the file comment);
  // writes nothing while the free-space reserve is short.
  Status IndexPending();
  // Loads the outcome counts into counts_, counting the outcomes first (and
  // writing the counts) when the stored ones are missing or not exact at
  // the applied offset; leaves counts_ empty while the free-space reserve
  // is short (Commit then keeps none, and a later open counts).
  Status IndexOutcomeCounts();
  // Counts every stored outcome, reading them all.
  Result<OutcomeCounts> CountByReading() const;
  // Adds the outcomes of `batch` to `counts`, taking out the ones they
  // replace (those at or below max_outcome_id_, read in one MultiGet).
  Status CountBatchOutcomes(const std::map<std::int64_t, Outcome>& outcomes,
                            OutcomeCounts* counts) const;
  // options_.reserve's verdict; OK without one.
  Status CheckReserve() const {
    return options_.reserve != nullptr ? options_.reserve->Check() : Status::Ok();
  }

  Options options_;
  std::unique_ptr<rocksdb::DB> db_;
  // Commit()'s batch, cleared and reused: a fold batch is megabytes, and
  // growing a fresh buffer to that size each time cost more than the copy.
  std::unique_ptr<rocksdb::WriteBatch> commit_batch_;
  PendingBatchEncoder pending_encoder_;  // Commit()'s, for the same reason
  // The stored outcome counts, exact at the applied offset; empty in a
  // read-only store and until IndexOutcomeCounts() has them.
  std::optional<OutcomeCounts> counts_;
  // The highest mailbox id with a stored outcome (none: no outcome), kept
  // by the writer from IndexOutcomeCounts() on: only an id at or below it
  // can replace an outcome that the counts hold.
  std::optional<std::int64_t> max_outcome_id_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
  rocksdb::ColumnFamilyHandle* flights_ = nullptr;
  rocksdb::ColumnFamilyHandle* sodt_ = nullptr;
  rocksdb::ColumnFamilyHandle* reference_ = nullptr;
  rocksdb::ColumnFamilyHandle* identity_ = nullptr;
  rocksdb::ColumnFamilyHandle* outcomes_ = nullptr;
  rocksdb::ColumnFamilyHandle* meta_ = nullptr;
  rocksdb::ColumnFamilyHandle* pending_ = nullptr;
};

}  // namespace msgx
