#include "codecs/time_zone.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include "base/big_endian.h"

namespace msgx {
namespace {

struct Header {
  char version = 0;
  std::uint32_t isutcnt = 0, isstdcnt = 0, leapcnt = 0, timecnt = 0, typecnt = 0, charcnt = 0;
};

bool ReadHeader(std::string_view b, std::size_t at, Header* h) {
  if (b.size() < at + 44 || b.substr(at, 4) != "TZif") return false;
  h->version = b[at + 4];
  h->isutcnt = ReadBigEndian32(b.substr(at + 20));
  h->isstdcnt = ReadBigEndian32(b.substr(at + 24));
  h->leapcnt = ReadBigEndian32(b.substr(at + 28));
  h->timecnt = ReadBigEndian32(b.substr(at + 32));
  h->typecnt = ReadBigEndian32(b.substr(at + 36));
  h->charcnt = ReadBigEndian32(b.substr(at + 40));
  return h->typecnt > 0 && h->typecnt < 256 && h->timecnt < 100000 && h->charcnt < 100000 &&
         h->leapcnt < 100000 && h->isutcnt <= h->typecnt && h->isstdcnt <= h->typecnt;
}

std::size_t DataSize(const Header& h, std::size_t time_size) {
  return std::size_t{h.timecnt} * time_size + h.timecnt + std::size_t{h.typecnt} * 6 + h.charcnt +
         h.leapcnt * (time_size + 4) + h.isstdcnt + h.isutcnt;
}

}  // namespace

std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

Result<std::string> TimeZone::ReadTzif(std::string_view name, const std::string& zoneinfo_dir) {
  if (name.empty() || name.front() == '/' || name.find("..") != std::string_view::npos) {
    return Status::Config("airport.timezone: \"" + std::string(name) + "\" is not a zone name");
  }
  std::string path = zoneinfo_dir + "/" + std::string(name);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return Status::Config("airport.timezone: \"" + std::string(name) + "\": cannot read " + path);
  }
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

Result<TimeZone> TimeZone::Load(std::string_view name, const std::string& zoneinfo_dir) {
  auto bytes = ReadTzif(name, zoneinfo_dir);
  if (!bytes.ok()) return bytes.status();
  return FromTzif(name, *bytes);
}

Result<TimeZone> TimeZone::FromTzif(std::string_view name, std::string_view b) {
  auto bad = [&](const char* why) {
    return Status::Config("airport.timezone: \"" + std::string(name) + "\": bad TZif file (" + why +
                          ")");
  };
  Header h;
  if (!ReadHeader(b, 0, &h)) return bad("header");
  std::size_t at = 44;
  std::size_t time_size = 4;
  if (h.version >= '2') {
    // Skip the v1 block; use the 64-bit v2+ block.
    at += DataSize(h, 4);
    if (!ReadHeader(b, at, &h)) return bad("v2 header");
    at += 44;
    time_size = 8;
  }
  const std::size_t data_end = at + DataSize(h, time_size);
  if (b.size() < data_end) return bad("truncated");
  // The data block's first three arrays (RFC 8536 §3.2), within data_end.
  const std::string_view times = b.substr(at, std::size_t{h.timecnt} * time_size);
  const std::string_view type_indexes = b.substr(at + times.size(), h.timecnt);
  const std::string_view types =
      b.substr(at + times.size() + type_indexes.size(), std::size_t{h.typecnt} * 6);

  TimeZone tz;
  tz.name_ = std::string(name);
  std::vector<std::int32_t> type_offsets(h.typecnt);
  for (std::uint32_t i = 0; i < h.typecnt; ++i) {
    type_offsets[i] = static_cast<std::int32_t>(ReadBigEndian32(types.substr(std::size_t{i} * 6)));
  }
  tz.initial_offset_ = type_offsets[0];
  tz.transitions_.reserve(h.timecnt);
  tz.offsets_.reserve(h.timecnt);
  for (std::uint32_t i = 0; i < h.timecnt; ++i) {
    std::int64_t t =
        time_size == 8
            ? static_cast<std::int64_t>(ReadBigEndian64(times.substr(std::size_t{i} * 8)))
            : static_cast<std::int32_t>(ReadBigEndian32(times.substr(std::size_t{i} * 4)));
    const auto type = static_cast<unsigned char>(type_indexes[i]);
    if (type >= h.typecnt) return bad("type index");
    if (!tz.transitions_.empty() && t <= tz.transitions_.back()) return bad("unordered");
    tz.transitions_.push_back(t);
    tz.offsets_.push_back(type_offsets[type]);
  }
  if (time_size == 8) {
    // RFC 8536 §3.3: "\n" TZ-string "\n"; an empty string means no rule.
    // Whatever follows the closing newline is ignored.
    if (b.size() <= data_end || b[data_end] != '\n') return bad("footer");
    const std::size_t close = b.find('\n', data_end + 1);
    if (close == std::string_view::npos) return bad("footer");
    const std::string_view rule = b.substr(data_end + 1, close - data_end - 1);
    if (!rule.empty()) {
      tz.footer_ = PosixTz::Parse(rule);
      if (!tz.footer_) return bad("footer");
    }
  }
  return tz;
}

TimeZone TimeZone::Fixed(std::string name, std::int32_t offset_seconds) {
  TimeZone tz;
  tz.name_ = std::move(name);
  tz.initial_offset_ = offset_seconds;
  return tz;
}

std::int32_t TimeZone::OffsetAt(std::int64_t utc_seconds) const {
  if (footer_ && (transitions_.empty() || utc_seconds >= transitions_.back())) {
    return footer_->OffsetAt(utc_seconds);
  }
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc_seconds);
  if (it == transitions_.begin()) return initial_offset_;
  return offsets_[static_cast<std::size_t>(it - transitions_.begin() - 1)];
}

std::int64_t TimeZone::LocalToUtc(std::int64_t local_seconds) const {
  // Changes of offset (stored or by the footer's rule) are far more than a
  // day apart, so the offsets in effect a day either side are the only
  // candidates.
  const std::int32_t before = OffsetAt(local_seconds - 86400);
  const std::int32_t after = OffsetAt(local_seconds + 86400);
  const std::int64_t t1 = local_seconds - before;
  const std::int64_t t2 = local_seconds - after;
  const bool ok1 = OffsetAt(t1) == before;
  const bool ok2 = OffsetAt(t2) == after;
  if (ok1 && ok2) return std::min(t1, t2);
  if (ok1) return t1;
  if (ok2) return t2;
  return t1;  // in a gap: the pre-transition offset moves it forward
}

}  // namespace msgx
