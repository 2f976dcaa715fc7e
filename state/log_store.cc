#include "state/log_store.h"

#include <rocksdb/table.h>
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>
#include <variant>

#include "base/big_endian.h"
#include "base/log.h"
#include "base/metrics.h"
#include "state/log_layout.h"
#include "state/rocksdb_threads.h"
#include "state/store_memory.h"

namespace msgx {
namespace {

using log_layout::FromRocks;

// A random (version 4) UUID from /dev/urandom.
Result<std::string> NewUuid() {
  unsigned char b[16];
  std::ifstream f("/dev/urandom", std::ios::binary);
  if (!f.read(reinterpret_cast<char*>(b), sizeof b)) {
    return Status::Infra("cannot read /dev/urandom for the log UUID");
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  char out[37];
  std::snprintf(out, sizeof out,
                "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                b[15]);
  return std::string(out, 36);
}

// Writes into *batch what turns `from` into `to` for one family of ranges.
void DiffRanges(const std::map<std::int64_t, SkippedRange>& from,
                const std::map<std::int64_t, SkippedRange>& to, std::string (*key)(std::int64_t),
                rocksdb::WriteBatch* batch) {
  for (const auto& [first, r] : from) {
    if (!to.contains(first)) batch->Delete(key(first));
  }
  for (const auto& [first, r] : to) {
    auto it = from.find(first);
    if (it == from.end() || !(it->second == r)) batch->Put(key(first), log_layout::EncodeRange(r));
  }
}

}  // namespace

rocksdb::Options LogStoreOptions() {
  rocksdb::Options o;
  o.env = EnvWithSignalStacks();  // background jobs reported like msgx's own threads
  o.create_if_missing = true;
  o.paranoid_checks = true;
  // Secondary instances need every file open (max_open_files = -1).
  o.max_open_files = -1;
  o.keep_log_file_num = 5;
  // With every file open, the files' index blocks must live in the bounded
  // cache, not beside it (state/store_memory.h).
  o.table_factory.reset(rocksdb::NewBlockBasedTableFactory(CachedTableOptions()));
  return o;
}

Result<std::unique_ptr<LogStore>> LogStore::Open(const std::string& dir, Clock* clock,
                                                 rocksdb::Env* env) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Infra("create " + dir + ": " + ec.message());
  rocksdb::DB* raw = nullptr;
  rocksdb::Options options = LogStoreOptions();
  if (env != nullptr) options.env = env;
  rocksdb::Status s = rocksdb::DB::Open(options, dir, &raw);
  if (!s.ok()) return FromRocks(s, "open log " + dir);
  std::unique_ptr<LogStore> store(new LogStore(std::unique_ptr<rocksdb::DB>(raw), clock));

  auto meta = log_layout::LoadLogMeta(store->db_.get());
  if (!meta.ok()) return meta.status();
  if (meta->log_uuid.empty()) {
    auto uuid = NewUuid();
    if (!uuid.ok()) return uuid.status();
    rocksdb::WriteBatch batch;
    batch.Put(log_layout::kUuidKey, *uuid);
    Status c = store->Commit(&batch);
    if (!c.ok()) return c;
    meta->log_uuid = *uuid;
  }
  store->log_uuid_ = meta->log_uuid;
  store->next_offset_ = meta->next_offset;
  store->capture_ = std::move(meta->capture);
  store->last_command_id_ = meta->last_command_id;
  store->last_settings_offset_ = meta->last_settings_offset;
  auto index = log_layout::LoadCommandIndex(store->db_.get());
  if (!index.ok()) return index.status();
  store->command_index_upto_ = index->upto;
  if (store->command_index_upto_ < store->next_offset_) {
    if (Status st = store->IndexCommands(); !st.ok()) return st;
  }
  if (store->next_offset_ > 0) {
    LogIterator it(store->db_.get(), store->next_offset_ - 1);
    if (!it.Valid())
      return it.status().ok() ? Status::Internal("last record vanished") : it.status();
    store->last_append_micros_ = it.record()->append_micros();
  }
  return store;
}

LogStore::LogStore(std::unique_ptr<rocksdb::DB> db, Clock* clock)
    : db_(std::move(db)), clock_(clock) {}

LogStore::~LogStore() {
  if (db_) db_->Close().PermitUncheckedError();
}

StoreMemory LogStore::Memory() const { return MemoryOf(db_.get(), {db_->DefaultColumnFamily()}); }

std::uint64_t LogStore::next_offset() const {
  std::lock_guard lock(mu_);
  return next_offset_;
}

std::optional<std::uint64_t> LogStore::last_offset() const {
  std::lock_guard lock(mu_);
  if (next_offset_ == 0) return std::nullopt;
  return next_offset_ - 1;
}

std::optional<CaptureProgress> LogStore::capture_progress() const {
  std::lock_guard lock(mu_);
  return capture_;
}

std::int64_t LogStore::last_command_id() const {
  std::lock_guard lock(mu_);
  return last_command_id_;
}

std::optional<std::uint64_t> LogStore::last_settings_offset() const {
  std::lock_guard lock(mu_);
  return last_settings_offset_;
}

Result<std::optional<std::uint64_t>> LogStore::CommandOffset(std::int64_t command_id) const {
  return log_layout::LookupCommandOffset(db_.get(), command_id);
}

MicrosSinceEpoch LogStore::AppendTime() const {
  const MicrosSinceEpoch wall = clock_->NowMicros();
  const std::int64_t mono = clock_->MonotonicMicros();
  std::optional<MicrosSinceEpoch> bound;
  if (last_append_mono_ >= 0) bound = last_append_micros_ + (mono - last_append_mono_);
  if (reference_mono_ >= 0) {
    const MicrosSinceEpoch by_reference = reference_micros_ + (mono - reference_mono_);
    bound = bound ? std::min(*bound, by_reference) : by_reference;
  }
  if (bound && wall > *bound + kClockJumpToleranceMicros) {
    return std::max(*bound, last_append_micros_);
  }
  return std::max(wall, last_append_micros_);
}

void LogStore::ObserveReferenceClock(MicrosSinceEpoch reference_now) {
  std::lock_guard<std::mutex> lock(mu_);
  reference_micros_ = reference_now;
  reference_mono_ = clock_->MonotonicMicros();
}

Result<log_layout::CommandIndex> LogStore::CommandIndex() const {
  return log_layout::LoadCommandIndex(db_.get());
}

Status LogStore::IndexCommands() {
  const std::uint64_t from = command_index_upto_;
  rocksdb::WriteBatch batch;
  std::uint64_t commands = 0;
  LogIterator it(db_.get(), from, next_offset_);
  for (; it.Valid(); it.Next()) {
    if (it.record()->kind() == fb::RecordKind::COMMAND) {
      batch.Put(log_layout::CommandIndexKey(it.offset()), "");
      ++commands;
    }
  }
  if (!it.status().ok()) return it.status();
  batch.Put(log_layout::kCommandIndexUptoKey, BigEndian64(next_offset_));
  if (Status s = Commit(&batch); !s.ok()) return s;
  Logger("log")->info("indexed {} command record(s) among offsets {}..{} (appended unindexed)",
                      commands, from, next_offset_ - 1);
  command_index_upto_ = next_offset_;
  return {};
}

void LogStore::PutRecords(std::span<const LogRecordData> records, std::uint64_t first,
                          MicrosSinceEpoch t, rocksdb::WriteBatch* batch) const {
  for (std::size_t i = 0; i < records.size(); ++i) {
    batch->Put(log_layout::RecordKey(first + i), EncodeLogRecord(records[i], t));
    if (records[i].kind == fb::RecordKind::COMMAND) {
      batch->Put(log_layout::CommandIndexKey(first + i), "");
    }
  }
  // The index stays complete up to the end, as long as it was before.
  if (!records.empty() && command_index_upto_ == first) {
    batch->Put(log_layout::kCommandIndexUptoKey, BigEndian64(first + records.size()));
  }
}

void LogStore::Advanced(std::uint64_t first, std::size_t count, MicrosSinceEpoch t) {
  // PutRecords moved the index's upto with the records if it was here.
  if (command_index_upto_ == first) command_index_upto_ = first + count;
  next_offset_ = first + count;
  if (count > 0) Appended(t);
}

void LogStore::Appended(MicrosSinceEpoch t) {
  const MicrosSinceEpoch wall = clock_->NowMicros();
  const bool bounded = wall > t + kClockJumpToleranceMicros;
  if (bounded) {
    static Counter* const kBounded = Metrics::Global().GetCounter(
        "msgx_log_clock_bounded_total",
        "Appends whose time was bounded because the host clock jumped ahead");
    kBounded->Add(1);
  }
  if (bounded != clock_bounded_) {
    if (bounded) {
      Logger("log")->warn(
          "the host clock is {} s ahead of the steady clock since the last append or of the "
          "mailbox server's clock: log times follow the steady clock until it is back",
          (wall - t) / 1'000'000);
    } else {
      Logger("log")->info("the host clock is back in step: log times follow it again");
    }
    clock_bounded_ = bounded;
  }
  last_append_micros_ = t;
  last_append_mono_ = clock_->MonotonicMicros();
}

Status LogStore::Commit(rocksdb::WriteBatch* batch) {
  if (reserve_ != nullptr) {
    if (Status s = reserve_->Check(); !s.ok()) return s;
  }
  rocksdb::WriteOptions wo;
  wo.sync = true;
  return FromRocks(db_->Write(wo, batch), "append to log");
}

Result<std::uint64_t> LogStore::Append(std::span<const LogRecordData> records,
                                       const CaptureProgress& progress) {
  std::lock_guard lock(mu_);
  if (capture_ && progress.watermark < capture_->watermark) {
    return Status::Internal("capture watermark would move back from " +
                            std::to_string(capture_->watermark) + " to " +
                            std::to_string(progress.watermark));
  }
  const std::uint64_t first = next_offset_;
  rocksdb::WriteBatch batch;
  const MicrosSinceEpoch t = AppendTime();
  PutRecords(records, first, t, &batch);

  static const CaptureProgress kNone;
  const CaptureProgress& prev = capture_ ? *capture_ : kNone;
  if (!capture_ || prev.watermark != progress.watermark) {
    batch.Put(log_layout::kWatermarkKey,
              BigEndian64(static_cast<std::uint64_t>(progress.watermark)));
  }
  if (!capture_ || prev.late_captured != progress.late_captured) {
    batch.Put(log_layout::kLateKey,
              BigEndian64(static_cast<std::uint64_t>(progress.late_captured)));
  }
  DiffRanges(prev.skipped, progress.skipped, &log_layout::SkipKey, &batch);
  // Aged-out ranges are only ever added: `progress` carries the ones aged out
  // since the last append, and a recorded one stays in the store for audit.
  for (const auto& [first_id, r] : progress.aged_out) {
    auto it = prev.aged_out.find(first_id);
    if (it == prev.aged_out.end() || !(it->second == r)) {
      batch.Put(log_layout::AgedKey(first_id), log_layout::EncodeRange(r));
    }
  }

  Status s = Commit(&batch);
  if (!s.ok()) return s;
  Advanced(first, records.size(), t);
  capture_ = progress;
  return first;
}

Result<std::uint64_t> LogStore::AppendCommands(std::span<const LogRecordData> records) {
  std::lock_guard lock(mu_);
  const std::uint64_t first = next_offset_;
  rocksdb::WriteBatch batch;
  const MicrosSinceEpoch t = AppendTime();
  PutRecords(records, first, t, &batch);
  std::int64_t last_id = last_command_id_;
  for (std::size_t i = 0; i < records.size(); ++i) {
    const auto& cmd = records[i].command;
    if (records[i].kind != fb::RecordKind::COMMAND || !cmd) {
      return Status::Internal("AppendCommands given a non-command record");
    }
    if (cmd->command_id == 0) continue;
    batch.Put(log_layout::CommandKey(cmd->command_id), BigEndian64(first + i));
    last_id = std::max(last_id, cmd->command_id);
  }
  if (last_id != last_command_id_) {
    batch.Put(log_layout::kLastCommandKey, BigEndian64(static_cast<std::uint64_t>(last_id)));
  }
  std::optional<std::uint64_t> last_settings = last_settings_offset_;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (std::holds_alternative<SettingsArgs>(records[i].command->args)) last_settings = first + i;
  }
  if (last_settings != last_settings_offset_) {
    batch.Put(log_layout::kLastSettingsKey, BigEndian64(*last_settings));
  }
  Status s = Commit(&batch);
  if (!s.ok()) return s;
  Advanced(first, records.size(), t);
  last_command_id_ = last_id;
  last_settings_offset_ = last_settings;
  return first;
}

std::unique_ptr<LogIterator> LogStore::NewIterator(std::uint64_t from, std::uint64_t to) const {
  return std::make_unique<LogIterator>(db_.get(), from, to);
}

Status LogStore::Read(std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) const {
  return ReadLog(db_.get(), from, max, out);
}

std::unique_ptr<LogCursor> LogStore::NewCursor() const {
  return std::make_unique<LogCursor>(db_.get());
}

}  // namespace msgx
