#include "state/state_store.h"

#include <rocksdb/db.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/iterator.h>
#include <rocksdb/options.h>
#include <rocksdb/slice_transform.h>
#include <rocksdb/snapshot.h>
#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <iterator>
#include <limits>

#include "base/big_endian.h"
#include "state/rocksdb_threads.h"
#include "state/state_codec.h"
#include "state/store_memory.h"

namespace msgx {
namespace {

constexpr const char* kCfNames[] = {"default",  "flights",  "flight_sodt", "reference",
                                    "identity", "outcomes", "meta",        "pending"};
static_assert(std::size(kCfNames) == StateStore::kColumnFamilies);

Status Infra(const rocksdb::Status& s, std::string_view what) {
  return Status::Infra("state store " + std::string(what) + ": " + s.ToString());
}

// Signed values as keys that sort in number order: the sign bit flipped,
// stored big-endian. SignUnflip reverses it.
constexpr std::uint64_t kSignBit = 0x8000000000000000ULL;
std::uint64_t SignFlip(std::int64_t v) { return static_cast<std::uint64_t>(v) ^ kSignBit; }
std::int64_t SignUnflip(std::uint64_t u) { return static_cast<std::int64_t>(u ^ kSignBit); }

std::string SodtKey(MicrosSinceEpoch sodt, std::string_view flid) {
  return BigEndian64(SignFlip(sodt)) + std::string(flid);
}

std::string RefKey(std::string_view type, std::string_view key) {
  std::string k(type);
  k.push_back('\0');
  k.append(key);
  return k;
}

std::string TimeKey(MicrosSinceEpoch t, std::string_view key) {
  return "t" + BigEndian64(SignFlip(t)) + std::string(key);
}

rocksdb::Slice S(std::string_view s) { return {s.data(), s.size()}; }

// Under "batch/", with keys of another length than the batch ends', so that
// an older msgx, which skips "batch/" in its state walk and keys of other
// lengths in BatchEnds(), reads a store with the index as before.
constexpr std::string_view kPendPrefix = "batch/pending/";
constexpr std::string_view kPendingIndexed = "batch/pending-index";
// Under "batch/" too: not state (the state walk skips it), and 20 bytes long,
// so neither a batch end nor a pending index entry.
constexpr std::string_view kOutcomeCounts = "batch/outcome-counts";

std::string PendKey(std::int64_t first) {
  return std::string(kPendPrefix) + BigEndian64(static_cast<std::uint64_t>(first));
}

std::string PendValue(std::int64_t last, MicrosSinceEpoch last_append) {
  return BigEndian64(static_cast<std::uint64_t>(last)) +
         BigEndian64(static_cast<std::uint64_t>(last_append));
}

}  // namespace

rocksdb::ColumnFamilyOptions StateStoreFamilyOptions(std::string_view name) {
  rocksdb::ColumnFamilyOptions cf;
  // Every table block through the process's bounded cache
  // (state/store_memory.h).
  rocksdb::BlockBasedTableOptions table = CachedTableOptions();
  if (name == "identity") {
    // Nearly every message looks up an identity key that is not bound
    // (a new message): whole-key Bloom filters, in the memtable and in
    // the tables, answer most of those misses without a search.
    table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
    table.whole_key_filtering = true;
    cf.memtable_whole_key_filtering = true;
    cf.memtable_prefix_bloom_size_ratio = 0.05;
    // A batch writes "k" keys in no useful order and "t" keys in time order,
    // interleaved: a hint per first byte lets each "t" insert start where
    // the last one ended instead of searching the memtable from the top
    // (docs/performance.md#stored-flights-and-pending-batches).
    cf.memtable_insert_with_hint_prefix_extractor.reset(rocksdb::NewFixedPrefixTransform(1));
  }
  cf.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  return cf;
}

Result<std::unique_ptr<StateStore>> StateStore::Open(const std::string& path, Options options) {
  rocksdb::DBOptions db_opts;
  db_opts.create_if_missing = !options.read_only;
  db_opts.create_missing_column_families = !options.read_only;
  db_opts.env = options.env != nullptr ? options.env : EnvWithSignalStacks();
  db_opts.max_total_wal_size = options.max_wal_bytes;
  // A store without a WAL is thrown away after use: RocksDB would otherwise
  // write its memtables to table files at close, only to have them deleted.
  db_opts.avoid_flush_during_shutdown = !options.wal;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const char* n : kCfNames) cfs.emplace_back(n, StateStoreFamilyOptions(n));
  std::unique_ptr<StateStore> store(new StateStore());
  store->options_ = options;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = options.read_only
                          ? rocksdb::DB::OpenForReadOnly(db_opts, path, cfs, &store->handles_, &raw)
                          : rocksdb::DB::Open(db_opts, path, cfs, &store->handles_, &raw);
  if (!s.ok()) {
    // A damaged or incompatible store is not an outage; a full disk, a
    // lock or another I/O error is (the caller retries).
    if (s.IsCorruption() || s.IsNotSupported() || s.IsInvalidArgument()) {
      return Status::Internal("state store open " + path + ": " + s.ToString());
    }
    return Infra(s, "open " + path);
  }
  store->db_.reset(raw);
  store->commit_batch_ = std::make_unique<rocksdb::WriteBatch>();
  store->flights_ = store->handles_[1];
  store->sodt_ = store->handles_[2];
  store->reference_ = store->handles_[3];
  store->identity_ = store->handles_[4];
  store->outcomes_ = store->handles_[5];
  store->meta_ = store->handles_[6];
  store->pending_ = store->handles_[7];
  if (!options.read_only) {
    if (Status st = store->IndexPending(); !st.ok()) return st;
    if (Status st = store->IndexOutcomeCounts(); !st.ok()) return st;
  }
  return store;
}

StateStore::~StateStore() {
  if (db_) {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    db_->Close();
  }
}

Result<std::optional<std::string>> StateStore::Get(rocksdb::ColumnFamilyHandle* cf,
                                                   std::string_view key,
                                                   const rocksdb::Snapshot* snapshot) const {
  std::string value;
  rocksdb::ReadOptions ro;
  ro.snapshot = snapshot;
  rocksdb::Status s = db_->Get(ro, cf, S(key), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return Infra(s, "get");
  return std::optional<std::string>(std::move(value));
}

Result<std::optional<Flight>> StateStore::GetFlight(std::string_view flid) const {
  auto v = Get(flights_, flid);
  if (!v.ok()) return v.status();
  if (!*v) return std::optional<Flight>();
  auto f = DecodeFlight(**v);
  if (!f.ok()) return f.status();
  return std::optional<Flight>(std::move(*f));
}

Result<std::vector<std::string>> StateStore::FlightsBySodt(MicrosSinceEpoch from,
                                                           MicrosSinceEpoch to) const {
  std::vector<std::string> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), sodt_));
  const std::string start = BigEndian64(SignFlip(from));
  for (it->Seek(S(start)); it->Valid(); it->Next()) {
    const rocksdb::Slice k = it->key();
    if (k.size() < 8) continue;
    const std::int64_t sodt = SignUnflip(ReadBigEndian64({k.data(), 8}));
    if (sodt > to) break;
    out.emplace_back(k.data() + 8, k.size() - 8);
  }
  if (!it->status().ok()) return Infra(it->status(), "scan sodt");
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::optional<ReferenceRecord>> StateStore::GetReference(std::string_view type,
                                                                std::string_view key) const {
  auto v = Get(reference_, RefKey(type, key));
  if (!v.ok()) return v.status();
  if (!*v) return std::optional<ReferenceRecord>();
  auto r = DecodeReference(**v);
  if (!r.ok()) return r.status();
  return std::optional<ReferenceRecord>(std::move(*r));
}

Result<std::vector<std::string>> StateStore::ReferenceKeys(std::string_view type) const {
  std::vector<std::string> out;
  const std::string prefix = RefKey(type, "");
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), reference_));
  for (it->Seek(S(prefix)); it->Valid() && it->key().starts_with(S(prefix)); it->Next()) {
    out.emplace_back(it->key().data() + prefix.size(), it->key().size() - prefix.size());
  }
  if (!it->status().ok()) return Infra(it->status(), "scan reference");
  return out;
}

StoreMemory StateStore::Memory() const { return MemoryOf(db_.get(), handles_); }

Result<std::optional<IdentityBinding>> StateStore::GetBinding(std::string_view key) const {
  auto v = Get(identity_, "k" + std::string(key));
  if (!v.ok()) return v.status();
  if (!*v) return std::optional<IdentityBinding>();
  auto b = DecodeBinding(**v);
  if (!b.ok()) return b.status();
  return std::optional<IdentityBinding>(std::move(*b));
}

Result<std::vector<IdentityBinding>> StateStore::BindingsBoundBefore(
    MicrosSinceEpoch micros) const {
  std::vector<std::string> keys;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), identity_));
  for (it->Seek("t"); it->Valid() && it->key().starts_with("t"); it->Next()) {
    const rocksdb::Slice k = it->key();
    if (k.size() < 9) continue;
    const std::int64_t t = SignUnflip(ReadBigEndian64({k.data() + 1, 8}));
    if (t >= micros) break;
    keys.emplace_back(k.data() + 9, k.size() - 9);
  }
  if (!it->status().ok()) return Infra(it->status(), "scan identity");
  std::vector<IdentityBinding> out;
  for (const std::string& k : keys) {
    auto b = GetBinding(k);
    if (!b.ok()) return b.status();
    if (*b) out.push_back(std::move(**b));
  }
  return out;
}

Result<std::optional<SenderSeqn>> StateStore::GetSender(std::string_view sndr) const {
  auto v = Get(identity_, "s" + std::string(sndr));
  if (!v.ok()) return v.status();
  if (!*v) return std::optional<SenderSeqn>();
  auto s = DecodeSender(**v);
  if (!s.ok()) return s.status();
  return std::optional<SenderSeqn>(*s);
}

Result<std::optional<Outcome>> StateStore::GetOutcome(std::int64_t mailbox_id) const {
  auto v = Get(outcomes_, BigEndian64(SignFlip(mailbox_id)));
  if (!v.ok()) return v.status();
  if (!*v) return std::optional<Outcome>();
  auto o = DecodeOutcome(**v);
  if (!o.ok()) return o.status();
  return std::optional<Outcome>(std::move(*o));
}

Result<StateMeta> StateStore::ReadMeta() const { return ReadMetaAt(nullptr); }

Result<StateMeta> StateStore::ReadMetaAt(const rocksdb::Snapshot* snapshot) const {
  StateMeta m;
  auto applied = Get(meta_, "applied", snapshot);
  if (!applied.ok()) return applied.status();
  if (*applied) m.applied_offset = static_cast<std::int64_t>(ReadBigEndian64(**applied));
  auto gen = Get(meta_, "generation", snapshot);
  if (!gen.ok()) return gen.status();
  if (*gen) m.generation = static_cast<std::int64_t>(ReadBigEndian64(**gen));
  auto fv = Get(meta_, "fold_version", snapshot);
  if (!fv.ok()) return fv.status();
  if (*fv) m.fold_version = static_cast<std::int64_t>(ReadBigEndian64(**fv));
  auto dg = Get(meta_, "digest", snapshot);
  if (!dg.ok()) return dg.status();
  if (*dg) m.digest = **dg;
  return m;
}

Result<StateMeta> StateStore::ForEachFlight(const std::function<Status(const Flight&)>& fn) const {
  rocksdb::ManagedSnapshot held(db_.get());
  const rocksdb::Snapshot* snap = held.snapshot();
  rocksdb::ReadOptions ro;
  ro.snapshot = snap;
  auto m = ReadMetaAt(snap);
  if (!m.ok()) return m.status();
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, flights_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto f = DecodeFlight({it->value().data(), it->value().size()});
    if (!f.ok()) return f.status();
    if (Status s = fn(*f); !s.ok()) return s;
  }
  if (!it->status().ok()) return Infra(it->status(), "scan flights");
  return m;
}

Result<std::vector<StateStore::BatchEnd>> StateStore::BatchEnds() const {
  std::vector<BatchEnd> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
  for (it->Seek("batch/"); it->Valid() && it->key().starts_with("batch/"); it->Next()) {
    const rocksdb::Slice k = it->key();
    const rocksdb::Slice v = it->value();
    if (k.size() != 14 || v.size() < 8) continue;
    out.push_back({static_cast<std::int64_t>(ReadBigEndian64({k.data() + 6, 8})),
                   static_cast<std::int64_t>(ReadBigEndian64({v.data(), 8})),
                   std::string(v.data() + 8, v.size() - 8)});
  }
  if (!it->status().ok()) return Infra(it->status(), "scan batches");
  return out;
}

Status StateStore::Commit(const BatchWrite& batch) {
  rocksdb::WriteBatch& wb = *commit_batch_;
  wb.Clear();
  for (const auto& [flid, f] : batch.flights) {
    // The old SODT index entry: known to the writer, or read straight from
    // the stored buffer.
    bool has_old = false, has_new = false;
    MicrosSinceEpoch old_sodt = 0, new_sodt = 0;
    if (auto known = batch.old_sodts.find(flid); known != batch.old_sodts.end()) {
      has_old = known->second.has_value();
      old_sodt = known->second.value_or(0);
    } else {
      auto old = Get(flights_, flid);
      if (!old.ok()) return old.status();
      if (*old) {
        auto sodt = StoredFlightSodt(**old);
        if (!sodt.ok()) return sodt.status();
        has_old = sodt->has_value();
        old_sodt = sodt->value_or(0);
      }
    }
    if (f) {
      const std::optional<MicrosSinceEpoch> s = f->Sodt();
      has_new = s.has_value();
      new_sodt = s.value_or(0);
    }
    const bool same = has_old == has_new && old_sodt == new_sodt;
    if (has_old && !same) wb.Delete(sodt_, S(SodtKey(old_sodt, flid)));
    if (f) {
      wb.Put(flights_, S(flid), S(EncodeFlight(*f)));
      if (has_new && !same) wb.Put(sodt_, S(SodtKey(new_sodt, flid)), rocksdb::Slice());
    } else {
      wb.Delete(flights_, S(flid));
    }
  }
  for (const auto& [k, r] : batch.references) {
    const std::string key = RefKey(k.first, k.second);
    if (r) {
      wb.Put(reference_, S(key), S(EncodeReference(*r)));
    } else {
      wb.Delete(reference_, S(key));
    }
  }
  for (const auto& [key, b] : batch.bindings) {
    // A key is bound once and only forgotten by expiry, so only a delete
    // needs the old binding (for its expiry-index entry).
    if (!b) {
      auto old = GetBinding(key);
      if (!old.ok()) return old.status();
      if (*old) wb.Delete(identity_, S(TimeKey((*old)->bound_micros, key)));
    }
    if (b) {
      wb.Put(identity_, S("k" + key), S(EncodeBinding(*b)));
      wb.Put(identity_, S(TimeKey(b->bound_micros, key)), rocksdb::Slice());
    } else {
      wb.Delete(identity_, S("k" + key));
    }
  }
  for (const auto& [sndr, s] : batch.senders) {
    wb.Put(identity_, S("s" + sndr), S(EncodeSender(s)));
  }
  for (const auto& [id, o] : batch.outcomes) {
    wb.Put(outcomes_, S(BigEndian64(SignFlip(id))), S(EncodeOutcome(o)));
  }
  const StateMeta& m = batch.meta;
  std::optional<OutcomeCounts> counts;
  if (counts_ && m.applied_offset >= 0) {
    counts = *counts_;
    if (Status c = CountBatchOutcomes(batch.outcomes, &*counts); !c.ok()) return c;
    wb.Put(meta_, S(kOutcomeCounts), S(counts->Encode(m.applied_offset)));
  } else if (!batch.outcomes.empty()) {
    counts_.reset();  // no longer exact: the next open counts again
  }
  if (m.applied_offset >= 0) {
    wb.Put(meta_, "applied", S(BigEndian64(static_cast<std::uint64_t>(m.applied_offset))));
    wb.Put(meta_, "digest", S(m.digest));
    wb.Put(meta_, S("batch/" + BigEndian64(static_cast<std::uint64_t>(m.applied_offset))),
           S(BigEndian64(static_cast<std::uint64_t>(m.fold_version)) + m.digest));
  }
  if (batch.pending) {
    const PendingBatch& p = *batch.pending;
    wb.Put(pending_, S(BigEndian64(static_cast<std::uint64_t>(p.first_offset))),
           S(pending_encoder_.Encode(p)));
    wb.Put(meta_, S(PendKey(p.first_offset)), S(PendValue(p.last_offset, p.last_append_micros)));
  }
  wb.Put(meta_, "generation", S(BigEndian64(static_cast<std::uint64_t>(m.generation))));
  wb.Put(meta_, "fold_version", S(BigEndian64(static_cast<std::uint64_t>(m.fold_version))));
  if (Status r = CheckReserve(); !r.ok()) return r;
  if (Status w = Write(&wb, "commit"); !w.ok()) return w;
  if (counts) counts_ = std::move(counts);
  if (!batch.outcomes.empty()) {
    max_outcome_id_ = std::max(max_outcome_id_.value_or(std::numeric_limits<std::int64_t>::min()),
                               batch.outcomes.rbegin()->first);
  }
  return {};
}

Status StateStore::CountBatchOutcomes(const std::map<std::int64_t, Outcome>& outcomes,
                                      OutcomeCounts* counts) const {
  // Only an id at or below the highest stored one can replace an outcome:
  // the batch's others (nearly all, as mailbox ids grow) are read nowhere.
  std::vector<std::string> keys;
  for (const auto& entry : outcomes) {
    if (!max_outcome_id_ || entry.first > *max_outcome_id_) break;
    // Mailbox-id order, which is the keys' byte order (SignFlip).
    keys.push_back(BigEndian64(SignFlip(entry.first)));
  }
  std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
  std::vector<rocksdb::PinnableSlice> values(keys.size());
  std::vector<rocksdb::Status> found(keys.size());
  if (!keys.empty()) {
    db_->MultiGet(rocksdb::ReadOptions(), outcomes_, keys.size(), slices.data(), values.data(),
                  found.data(), /*sorted_input=*/true);
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (found[i].IsNotFound()) continue;
    if (!found[i].ok()) return Infra(found[i], "read outcomes");
    auto prev = DecodeOutcome({values[i].data(), values[i].size()});
    if (!prev.ok()) return prev.status();
    counts->Add(*prev, -1);
  }
  for (const auto& entry : outcomes) counts->Add(entry.second, +1);
  return {};
}

Status StateStore::IndexOutcomeCounts() {
  {
    std::unique_ptr<rocksdb::Iterator> last(db_->NewIterator(rocksdb::ReadOptions(), outcomes_));
    last->SeekToLast();
    if (last->Valid() && last->key().size() == 8) {
      max_outcome_id_ = SignUnflip(ReadBigEndian64({last->key().data(), 8}));
    }
    if (!last->status().ok()) return Infra(last->status(), "seek outcomes");
  }
  auto kept = CountedOutcomes();
  if (!kept.ok()) return kept.status();
  if (*kept) {
    counts_ = std::move(**kept);
    return {};
  }
  // Below the free-space reserve nothing is written, so nothing is counted:
  // Commit keeps no counts, and a later open counts.
  if (!CheckReserve().ok()) return {};
  auto meta = ReadMeta();
  if (!meta.ok()) return meta.status();
  auto counts = CountByReading();
  if (!counts.ok()) return counts.status();
  rocksdb::WriteBatch wb;
  wb.Put(meta_, S(kOutcomeCounts), S(counts->Encode(meta->applied_offset)));
  if (Status w = Write(&wb, "count outcomes"); !w.ok()) return w;
  counts_ = std::move(*counts);
  return {};
}

Result<OutcomeCounts> StateStore::CountByReading() const {
  OutcomeCounts counts;
  if (Status s = ForEachOutcome([&](const Outcome& o) { counts.Add(o, +1); }); !s.ok()) return s;
  return counts;
}

Result<OutcomeCounts> StateStore::CountOutcomes() const {
  auto kept = CountedOutcomes();
  if (!kept.ok()) return kept.status();
  if (*kept) return std::move(**kept);
  return CountByReading();
}

Result<std::optional<OutcomeCounts>> StateStore::CountedOutcomes() const {
  rocksdb::ManagedSnapshot held(db_.get());
  const rocksdb::Snapshot* snap = held.snapshot();
  auto meta = ReadMetaAt(snap);
  if (!meta.ok()) return meta.status();
  auto stored = Get(meta_, kOutcomeCounts, snap);
  if (!stored.ok()) return stored.status();
  if (!*stored) return std::optional<OutcomeCounts>();
  // Counts that do not parse are not trusted either, like stale ones: they
  // are derived from the outcomes, which are the record.
  auto decoded = OutcomeCounts::Decode(**stored);
  if (!decoded.ok() || decoded->applied_offset != meta->applied_offset) {
    return std::optional<OutcomeCounts>();
  }
  return std::optional<OutcomeCounts>(std::move(decoded->counts));
}

Status StateStore::Write(rocksdb::WriteBatch* wb, std::string_view what) {
  rocksdb::WriteOptions wo;
  wo.sync = options_.sync && options_.wal;  // no WAL: nothing to sync
  wo.disableWAL = !options_.wal;
  rocksdb::Status s = db_->Write(wo, wb);
  if (!s.ok()) return Infra(s, what);
  return {};
}

Status StateStore::ForEachEntry(
    const std::function<void(std::string_view, std::string_view, std::string_view)>& fn) const {
  auto c = NewEntryCursor();
  for (; c->Valid(); c->Next()) fn(c->cf(), c->key(), c->value());
  return c->status();
}

std::unique_ptr<StateStore::EntryCursor> StateStore::NewEntryCursor(std::size_t first_cf,
                                                                    std::size_t end_cf) const {
  std::unique_ptr<EntryCursor> c(new EntryCursor(this));
  c->cf_ = first_cf;
  c->end_cf_ = std::min(end_cf, handles_.size());
  c->Settle();
  return c;
}

StateStore::EntryCursor::EntryCursor(const StateStore* store) : store_(store) {}
StateStore::EntryCursor::~EntryCursor() = default;

bool StateStore::EntryCursor::Valid() const { return it_ != nullptr && it_->Valid(); }
std::string_view StateStore::ColumnFamilyName(std::size_t i) { return kCfNames[i]; }

std::string_view StateStore::EntryCursor::cf() const { return kCfNames[cf_]; }
std::string_view StateStore::EntryCursor::key() const {
  return {it_->key().data(), it_->key().size()};
}
std::string_view StateStore::EntryCursor::value() const {
  return {it_->value().data(), it_->value().size()};
}

void StateStore::EntryCursor::Next() {
  it_->Next();
  Settle();
}

void StateStore::EntryCursor::Settle() {
  // The default column family (0) is unused; the pending batches (pruned on
  // their own schedule) and meta's "batch/" entries (the batch ends and
  // the pending batches' index) are not state.
  for (;;) {
    if (it_ == nullptr) {
      if (cf_ == 0) cf_ = 1;
      if (cf_ >= end_cf_ || store_->handles_[cf_] == store_->pending_) return;
      // A walk reads each block once: keep it out of the block cache.
      rocksdb::ReadOptions ro;
      ro.fill_cache = false;
      it_.reset(store_->db_->NewIterator(ro, store_->handles_[cf_]));
      it_->SeekToFirst();
    }
    if (it_->Valid()) {
      if (store_->handles_[cf_] == store_->meta_ && it_->key().starts_with("batch/")) {
        it_->Next();
        continue;
      }
      return;
    }
    if (!it_->status().ok()) {
      status_ = Infra(it_->status(), "scan");
      return;
    }
    it_.reset();
    ++cf_;
  }
}

Result<std::optional<PendingBatch>> StateStore::PendingCovering(std::int64_t offset) const {
  if (offset < 0) return std::optional<PendingBatch>();
  // Readers mostly ask for a batch's first offset: one Get reads that batch
  // alone, where a backward seek may read its neighbour too.
  auto exact = Get(pending_, BigEndian64(static_cast<std::uint64_t>(offset)));
  if (!exact.ok()) return exact.status();
  if (*exact) {
    auto p = DecodePendingBatch(**exact);
    if (!p.ok()) return p.status();
    return std::optional<PendingBatch>(std::move(*p));
  }
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), pending_));
  const std::string key = BigEndian64(static_cast<std::uint64_t>(offset));
  it->SeekForPrev(S(key));
  if (!it->Valid()) {
    if (!it->status().ok()) return Infra(it->status(), "seek pending");
    return std::optional<PendingBatch>();
  }
  auto p = DecodePendingBatch({it->value().data(), it->value().size()});
  if (!p.ok()) return p.status();
  if (p->last_offset < offset) return std::optional<PendingBatch>();
  return std::optional<PendingBatch>(std::move(*p));
}

Status StateStore::IndexPending() {
  auto marker = Get(meta_, kPendingIndexed);
  if (!marker.ok()) return marker.status();
  if (*marker) return {};
  // Below the free-space reserve, writing waits: until a later open writes
  // the index, listing reads the batches themselves (correct, slower). So
  // the batches are not read for it either.
  if (!CheckReserve().ok()) return {};
  auto entries = ReadPendingBatches(std::numeric_limits<std::int64_t>::max());
  if (!entries.ok()) return entries.status();
  rocksdb::WriteBatch wb;
  for (const PendingEntry& e : *entries) {
    wb.Put(meta_, S(PendKey(e.first)), S(PendValue(e.last, e.last_append)));
  }
  wb.Put(meta_, S(kPendingIndexed), "1");
  if (Status w = Write(&wb, "index pending"); !w.ok()) return w;
  return {};
}

Result<std::vector<StateStore::PendingEntry>> StateStore::ListPending(std::int64_t upto) const {
  std::vector<PendingEntry> out;
  auto marker = Get(meta_, kPendingIndexed);
  if (!marker.ok()) return marker.status();
  if (*marker) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), meta_));
    for (it->Seek(S(kPendPrefix)); it->Valid() && it->key().starts_with(S(kPendPrefix));
         it->Next()) {
      const rocksdb::Slice k = it->key();
      const rocksdb::Slice v = it->value();
      if (k.size() != kPendPrefix.size() + 8 || v.size() != 16) {
        return Status::Internal("state store: a pending index entry does not parse");
      }
      out.push_back({static_cast<std::int64_t>(ReadBigEndian64({k.data() + kPendPrefix.size(), 8})),
                     static_cast<std::int64_t>(ReadBigEndian64({v.data(), 8})),
                     static_cast<MicrosSinceEpoch>(ReadBigEndian64({v.data() + 8, 8}))});
      if (out.back().last > upto) break;
    }
    if (!it->status().ok()) return Infra(it->status(), "scan pending index");
    return out;
  }
  // Not indexed yet (a read-only open of a store written before the index).
  return ReadPendingBatches(upto);
}

Result<std::vector<StateStore::PendingEntry>> StateStore::ReadPendingBatches(
    std::int64_t upto) const {
  std::vector<PendingEntry> out;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), pending_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string_view bytes(it->value().data(), it->value().size());
    auto range = PendingBatchRange(bytes);
    if (!range.ok()) return range.status();
    auto appended = PendingBatchLastAppend(bytes);
    if (!appended.ok()) return appended.status();
    out.push_back({range->first, range->second, *appended});
    if (out.back().last > upto) break;
  }
  if (!it->status().ok()) return Infra(it->status(), "scan pending");
  return out;
}

Result<std::vector<std::pair<std::int64_t, std::int64_t>>> StateStore::PendingRanges() const {
  auto list = ListPending(std::numeric_limits<std::int64_t>::max());
  if (!list.ok()) return list.status();
  std::vector<std::pair<std::int64_t, std::int64_t>> out;
  out.reserve(list->size());
  for (const PendingEntry& e : *list) out.emplace_back(e.first, e.last);
  return out;
}

Result<int> StateStore::PrunePending(std::int64_t upto, MicrosSinceEpoch appended_before) {
  auto list = ListPending(upto);
  if (!list.ok()) return list.status();
  rocksdb::WriteBatch wb;
  int n = 0;
  for (const PendingEntry& e : *list) {
    if (e.last > upto) break;
    if (e.last_append >= appended_before) continue;
    wb.Delete(pending_, S(BigEndian64(static_cast<std::uint64_t>(e.first))));
    wb.Delete(meta_, S(PendKey(e.first)));
    ++n;
  }
  if (n == 0) return 0;
  if (Status r = CheckReserve(); !r.ok()) return r;
  if (Status w = Write(&wb, "prune pending"); !w.ok()) return w;
  return n;
}

Status StateStore::ForEachOutcome(const std::function<void(const Outcome&)>& fn) const {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), outcomes_));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto o = DecodeOutcome({it->value().data(), it->value().size()});
    if (!o.ok()) return o.status();
    fn(*o);
  }
  if (!it->status().ok()) return Infra(it->status(), "scan outcomes");
  return {};
}

}  // namespace msgx
