#include "state/log_reader.h"

#include <rocksdb/write_batch.h>

#include <filesystem>
#include <system_error>

#include "state/log_layout.h"
#include "state/log_store.h"

namespace msgx {

Result<std::unique_ptr<LogReader>> LogReader::OpenSecondary(const std::string& log_dir,
                                                            const std::string& secondary_dir) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::path(log_dir) / "CURRENT", ec)) {
    return Status::NotFound("no log at " + log_dir);
  }
  std::filesystem::create_directories(secondary_dir, ec);
  if (ec) return Status::Infra("create " + secondary_dir + ": " + ec.message());
  rocksdb::Options o = LogStoreOptions();
  o.create_if_missing = false;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::OpenAsSecondary(o, log_dir, secondary_dir, &raw);
  if (!s.ok()) return log_layout::FromRocks(s, "open log " + log_dir + " as secondary");
  std::unique_ptr<LogReader> reader(new LogReader(std::unique_ptr<rocksdb::DB>(raw)));
  Status r = reader->Reload();
  if (!r.ok()) return r;
  return reader;
}

LogReader::LogReader(std::unique_ptr<rocksdb::DB> db) : db_(std::move(db)) {}

LogReader::~LogReader() {
  if (db_) db_->Close().PermitUncheckedError();
}

Status LogReader::CatchUp() {
  Status s = log_layout::FromRocks(db_->TryCatchUpWithPrimary(), "catch up with the log");
  if (!s.ok()) return s;
  return Reload();
}

Status LogReader::Reload() {
  auto meta = log_layout::LoadLogMeta(db_.get());
  if (!meta.ok()) return meta.status();
  log_uuid_ = meta->log_uuid;
  next_offset_ = meta->next_offset;
  capture_ = std::move(meta->capture);
  last_command_id_ = meta->last_command_id;
  last_settings_offset_ = meta->last_settings_offset;
  return Status::Ok();
}

std::optional<std::uint64_t> LogReader::last_offset() const {
  if (next_offset_ == 0) return std::nullopt;
  return next_offset_ - 1;
}

std::unique_ptr<LogIterator> LogReader::NewIterator(std::uint64_t from, std::uint64_t to) const {
  return std::make_unique<LogIterator>(db_.get(), from, to);
}

Result<log_layout::CommandIndex> LogReader::CommandIndex() const {
  return log_layout::LoadCommandIndex(db_.get());
}

Status LogReader::Read(std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) const {
  return ReadLog(db_.get(), from, max, out);
}

Result<std::uint64_t> LogReader::CopyTo(const std::string& dest) const {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dest, ec)) return Status::Config("backup: " + dest + " exists");
  const std::string partial = dest + ".partial";
  fs::remove_all(partial, ec);
  rocksdb::Options o = LogStoreOptions();
  o.create_if_missing = true;
  o.error_if_exists = true;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(o, partial, &raw);
  if (!s.ok()) return log_layout::FromRocks(s, "create " + partial);
  std::unique_ptr<rocksdb::DB> out(raw);
  // One iterator: the secondary's view as of the last CatchUp(), every key.
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions()));
  rocksdb::WriteBatch batch;
  std::uint64_t keys = 0;
  rocksdb::WriteOptions wo;
  wo.disableWAL = true;  // flushed below, before the copy counts as done
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    batch.Put(it->key(), it->value());
    ++keys;
    if (batch.GetDataSize() >= (4u << 20)) {
      s = out->Write(wo, &batch);
      if (!s.ok()) return log_layout::FromRocks(s, "write " + partial);
      batch.Clear();
    }
  }
  if (!it->status().ok()) return log_layout::FromRocks(it->status(), "read the log");
  s = out->Write(wo, &batch);
  if (s.ok()) s = out->Flush(rocksdb::FlushOptions());
  if (s.ok()) s = out->Close();
  if (!s.ok()) return log_layout::FromRocks(s, "write " + partial);
  out.reset();
  fs::rename(partial, dest, ec);
  if (ec) return Status::Infra("rename " + partial + " to " + dest + ": " + ec.message());
  return keys;
}

}  // namespace msgx
