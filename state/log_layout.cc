#include "state/log_layout.h"

#include <functional>
#include <memory>
#include <string>

#include "base/big_endian.h"

namespace msgx::log_layout {
namespace {

std::string PrefixedBigEndian(std::string_view prefix, std::uint64_t v) {
  std::string k(prefix);
  AppendBigEndian64(&k, v);
  return k;
}

// Calls visit(number, value) for every key `prefix` + big-endian number, in
// order; `what` names them in the error for a key of another shape.
Status ForEachNumberedKey(rocksdb::DB* db, std::string_view prefix, std::string_view what,
                          const std::function<Status(std::uint64_t, std::string_view)>& visit) {
  std::string upper(prefix);
  upper.back() = static_cast<char>(upper.back() + 1);
  rocksdb::Slice upper_slice(upper);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper_slice;
  std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
  for (it->Seek(rocksdb::Slice(prefix.data(), prefix.size())); it->Valid(); it->Next()) {
    std::string_view key(it->key().data(), it->key().size());
    if (key.size() != prefix.size() + 8) {
      return Status::Internal("bad " + std::string(what) + " key in log meta");
    }
    Status s = visit(ReadBigEndian64(key.substr(prefix.size())),
                     std::string_view(it->value().data(), it->value().size()));
    if (!s.ok()) return s;
  }
  return FromRocks(it->status(), "scan log meta");
}

// Reads every key under `prefix` into ranges keyed by first id.
Status LoadRanges(rocksdb::DB* db, std::string_view prefix,
                  std::map<std::int64_t, SkippedRange>* out) {
  return ForEachNumberedKey(db, prefix, "range", [&](std::uint64_t id, std::string_view v) {
    auto first = static_cast<std::int64_t>(id);
    auto r = DecodeRange(first, v);
    if (!r.ok()) return r.status();
    (*out)[first] = *r;
    return Status::Ok();
  });
}

Result<std::optional<std::string>> GetKey(rocksdb::DB* db, std::string_view key) {
  std::string v;
  rocksdb::Status s = db->Get(rocksdb::ReadOptions(), rocksdb::Slice(key.data(), key.size()), &v);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, "read log meta");
  return std::optional<std::string>(std::move(v));
}

}  // namespace

std::string RecordKey(std::uint64_t offset) {
  return PrefixedBigEndian(std::string_view(&kRecordPrefix, 1), offset);
}
std::string SkipKey(std::int64_t first) {
  return PrefixedBigEndian(kSkipPrefix, static_cast<std::uint64_t>(first));
}
std::string AgedKey(std::int64_t first) {
  return PrefixedBigEndian(kAgedPrefix, static_cast<std::uint64_t>(first));
}
std::string CommandKey(std::int64_t command_id) {
  return PrefixedBigEndian(kCommandPrefix, static_cast<std::uint64_t>(command_id));
}
std::string CommandIndexKey(std::uint64_t offset) {
  return PrefixedBigEndian(kCommandIndexPrefix, offset);
}

// last (8) · skipped_at (8) · aged_out_at (8) · reason (1)
std::string EncodeRange(const SkippedRange& r) {
  std::string v = BigEndian64(static_cast<std::uint64_t>(r.last));
  v += BigEndian64(static_cast<std::uint64_t>(r.skipped_at));
  v += BigEndian64(static_cast<std::uint64_t>(r.aged_out_at));
  v += static_cast<char>(r.reason);
  return v;
}

Result<SkippedRange> DecodeRange(std::int64_t first, std::string_view v) {
  if (v.size() != 25) return Status::Internal("bad skipped-range value in log meta");
  SkippedRange r;
  r.first = first;
  r.last = static_cast<std::int64_t>(ReadBigEndian64(v.substr(0, 8)));
  r.skipped_at = static_cast<std::int64_t>(ReadBigEndian64(v.substr(8, 8)));
  r.aged_out_at = static_cast<std::int64_t>(ReadBigEndian64(v.substr(16, 8)));
  r.reason = static_cast<SkipReason>(v[24]);
  return r;
}

Result<LogMeta> LoadLogMeta(rocksdb::DB* db) {
  LogMeta meta;
  auto uuid = GetKey(db, kUuidKey);
  if (!uuid.ok()) return uuid.status();
  if (*uuid) meta.log_uuid = **uuid;

  // The last record key gives the next offset.
  {
    const std::string lower(1, kRecordPrefix);
    const std::string upper(1, static_cast<char>(kRecordPrefix + 1));
    rocksdb::Slice lower_slice(lower);
    rocksdb::Slice upper_slice(upper);
    rocksdb::ReadOptions ro;
    ro.iterate_lower_bound = &lower_slice;
    ro.iterate_upper_bound = &upper_slice;
    std::unique_ptr<rocksdb::Iterator> it(db->NewIterator(ro));
    it->SeekToLast();
    if (it->Valid()) {
      std::string_view key(it->key().data(), it->key().size());
      if (key.size() != 9 || key[0] != kRecordPrefix) return Status::Internal("bad record key");
      meta.next_offset = ReadBigEndian64(key.substr(1)) + 1;
    }
    Status s = FromRocks(it->status(), "find last offset");
    if (!s.ok()) return s;
  }

  auto wm = GetKey(db, kWatermarkKey);
  if (!wm.ok()) return wm.status();
  if (*wm) {
    CaptureProgress p;
    p.watermark = static_cast<std::int64_t>(ReadBigEndian64(**wm));
    auto late = GetKey(db, kLateKey);
    if (!late.ok()) return late.status();
    if (*late) p.late_captured = static_cast<std::int64_t>(ReadBigEndian64(**late));
    Status s = LoadRanges(db, kSkipPrefix, &p.skipped);
    if (!s.ok()) return s;
    s = LoadRanges(db, kAgedPrefix, &p.aged_out);
    if (!s.ok()) return s;
    meta.capture = std::move(p);
  }

  auto last_cmd = GetKey(db, kLastCommandKey);
  if (!last_cmd.ok()) return last_cmd.status();
  if (*last_cmd) meta.last_command_id = static_cast<std::int64_t>(ReadBigEndian64(**last_cmd));
  auto last_settings = GetKey(db, kLastSettingsKey);
  if (!last_settings.ok()) return last_settings.status();
  if (*last_settings) meta.last_settings_offset = ReadBigEndian64(**last_settings);
  return meta;
}

Result<std::optional<std::uint64_t>> LookupCommandOffset(rocksdb::DB* db, std::int64_t command_id) {
  auto v = GetKey(db, CommandKey(command_id));
  if (!v.ok()) return v.status();
  if (!*v) return std::optional<std::uint64_t>();
  return std::optional<std::uint64_t>(ReadBigEndian64(**v));
}

Result<CommandIndex> LoadCommandIndex(rocksdb::DB* db) {
  CommandIndex index;
  auto upto = GetKey(db, kCommandIndexUptoKey);
  if (!upto.ok()) return upto.status();
  if (!*upto) return index;  // written before the index: nothing listed
  index.upto = ReadBigEndian64(**upto);
  Status s = ForEachNumberedKey(db, kCommandIndexPrefix, "command index",
                                [&](std::uint64_t offset, std::string_view) {
                                  if (offset < index.upto) index.offsets.push_back(offset);
                                  return Status::Ok();
                                });
  if (!s.ok()) return s;
  return index;
}

Status FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  std::string m(what);
  m += ": ";
  m += s.ToString();
  if (s.IsCorruption() || s.IsNotSupported() || s.IsInvalidArgument()) {
    return Status::Internal(std::move(m));
  }
  return Status::Infra(std::move(m));
}

}  // namespace msgx::log_layout
