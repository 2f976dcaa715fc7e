#include "state/log_iterator.h"

#include "base/big_endian.h"
#include "state/log_layout.h"
#include "state/log_record.h"

namespace msgx {

const fb::LogRecord* LogEntry::record() const {
  auto r = DecodeLogRecord(bytes, nullptr);  // a std::string's bytes: aligned
  return r.ok() ? *r : nullptr;
}

LogIterator::LogIterator(rocksdb::DB* db, std::uint64_t from, std::uint64_t to) : db_(db), to_(to) {
  // An upper bound past the last possible offset is the next prefix.
  upper_ = to == std::numeric_limits<std::uint64_t>::max()
               ? std::string(1, static_cast<char>(log_layout::kRecordPrefix + 1))
               : log_layout::RecordKey(to);
  upper_slice_ = rocksdb::Slice(upper_);
  NewRocksIterator();
  SeekTo(from);
}

void LogIterator::Renew(std::uint64_t from) {
  valid_ = false;
  record_ = nullptr;
  status_ = Status::Ok();
  // A new one where this iterator does not support Refresh.
  if (!it_->Refresh().ok()) NewRocksIterator();
  SeekTo(from);
}

void LogIterator::NewRocksIterator() {
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice_;
  it_.reset(db_->NewIterator(ro));
}

void LogIterator::SeekTo(std::uint64_t from) {
  if (from >= to_) return;
  lower_ = log_layout::RecordKey(from);
  it_->Seek(lower_);
  Load();
}

void LogIterator::Next() {
  it_->Next();
  Load();
}

std::string_view LogIterator::bytes() const {
  return std::string_view(it_->value().data(), it_->value().size());
}

void LogIterator::Load() {
  valid_ = false;
  record_ = nullptr;
  if (!it_->Valid()) {
    status_ = log_layout::FromRocks(it_->status(), "read log");
    return;
  }
  std::string_view key(it_->key().data(), it_->key().size());
  if (key.size() != 9) {
    status_ = Status::Internal("bad record key in log");
    return;
  }
  auto rec = DecodeLogRecord(bytes(), &aligned_);
  offset_ = ReadBigEndian64(key.substr(1));
  if (!rec.ok()) {
    status_ = Status::Internal("offset " + std::to_string(offset_) + ": " + rec.status().message());
    return;
  }
  record_ = *rec;
  valid_ = true;
}

Status ReadLog(rocksdb::DB* db, std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
  if (max == 0) return Status::Ok();
  LogIterator it(db, from);
  return ReadEntries(&it, max, out);
}

Status ReadEntries(LogIterator* it, std::size_t max, std::vector<LogEntry>* out) {
  for (std::size_t n = 0; it->Valid() && n < max; it->Next(), ++n) {
    out->push_back(LogEntry{it->offset(), std::string(it->bytes())});
  }
  return it->status();
}

Status ScanEntries(LogIterator* it, std::size_t max, const LogVisitor& each) {
  for (std::size_t n = 0; it->Valid() && n < max; it->Next(), ++n) {
    if (Status s = each(it->offset(), *it->record()); !s.ok()) return s;
  }
  return it->status();
}

}  // namespace msgx
