#include "state/airport_zone.h"

#include <atomic>
#include <cstdio>

namespace msgx {
namespace {

std::atomic<std::uint64_t> next_zone_id{1};

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

// Howard Hinnant's civil_from_days.
void CivilFromDays(std::int64_t z, int* y, unsigned* m, unsigned* d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t yy = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int>(yy + (*m <= 2 ? 1 : 0));
}

}  // namespace

AirportZone::AirportZone() : id_(next_zone_id.fetch_add(1, std::memory_order_relaxed)) {}

void AppendAirportIso8601(MicrosSinceEpoch utc_micros, const AirportZone& zone, std::string* out) {
  const std::int64_t secs = FloorDiv(utc_micros, 1'000'000);
  const std::int64_t frac = utc_micros - secs * 1'000'000;
  const std::int32_t off = zone.OffsetSecondsAt(secs);
  const std::int64_t local = secs + off;
  const std::int64_t days = FloorDiv(local, 86400);
  const std::int64_t sod = local - days * 86400;
  int y = 0;
  unsigned mo = 0, d = 0;
  CivilFromDays(days, &y, &mo, &d);
  const char sign = off < 0 ? '-' : '+';
  const int aoff = off < 0 ? -off : off;
  if (y < 0 || y > 9999) {  // outside the four-digit years: the slow path
    char buf[64];
    if (frac != 0) {
      std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d.%06lld%c%02d:%02d", y, mo, d,
                    static_cast<int>(sod / 3600), static_cast<int>(sod / 60 % 60),
                    static_cast<int>(sod % 60), static_cast<long long>(frac), sign, aoff / 3600,
                    aoff / 60 % 60);
    } else {
      std::snprintf(buf, sizeof buf, "%04d-%02u-%02uT%02d:%02d:%02d%c%02d:%02d", y, mo, d,
                    static_cast<int>(sod / 3600), static_cast<int>(sod / 60 % 60),
                    static_cast<int>(sod % 60), sign, aoff / 3600, aoff / 60 % 60);
    }
    out->append(buf);
    return;
  }
  // YYYY-MM-DDTHH:MM:SS[.ffffff]+HH:MM, written digit by digit: this runs
  // for every time in every digest and payload, and snprintf took about a
  // tenth of the fold (docs/performance.md).
  char buf[32];
  char* p = buf;
  auto put = [&p](std::int64_t v, int digits) {
    for (int i = digits - 1; i >= 0; --i) {
      p[i] = static_cast<char>('0' + v % 10);
      v /= 10;
    }
    p += digits;
  };
  put(y, 4);
  *p++ = '-';
  put(mo, 2);
  *p++ = '-';
  put(d, 2);
  *p++ = 'T';
  put(sod / 3600, 2);
  *p++ = ':';
  put(sod / 60 % 60, 2);
  *p++ = ':';
  put(sod % 60, 2);
  if (frac != 0) {
    *p++ = '.';
    put(frac, 6);
  }
  *p++ = sign;
  put(aoff / 3600, 2);
  *p++ = ':';
  put(aoff / 60 % 60, 2);
  out->append(buf, p);
}

std::string FormatAirportIso8601(MicrosSinceEpoch utc_micros, const AirportZone& zone) {
  std::string out;
  AppendAirportIso8601(utc_micros, zone, &out);
  return out;
}

MicrosSinceEpoch StartOfAirportDay(MicrosSinceEpoch utc_micros, const AirportZone& zone) {
  const std::int64_t secs = FloorDiv(utc_micros, 1'000'000);
  const std::int32_t off = zone.OffsetSecondsAt(secs);
  const std::int64_t local_midnight = FloorDiv(secs + off, 86400) * 86400;
  // Re-evaluate the offset at the candidate (a DST change during the day).
  std::int64_t start = local_midnight - off;
  const std::int32_t off2 = zone.OffsetSecondsAt(start);
  if (off2 != off) start = local_midnight - off2;
  return start * 1'000'000;
}

MicrosSinceEpoch AirportWallClockToUtc(MicrosSinceEpoch wall_micros, const AirportZone& zone) {
  const std::int64_t wall = FloorDiv(wall_micros, 1'000'000);
  // The offset at the reading taken as UTC is at most a transition away
  // from the right one; once more at the first guess settles it.
  const std::int64_t guess = wall - zone.OffsetSecondsAt(wall);
  const std::int64_t off = zone.OffsetSecondsAt(guess);
  return wall_micros - off * 1'000'000;
}

std::string AirportDate(MicrosSinceEpoch utc_micros, const AirportZone& zone) {
  const std::int64_t secs = FloorDiv(utc_micros, 1'000'000);
  const std::int64_t days = FloorDiv(secs + zone.OffsetSecondsAt(secs), 86400);
  int y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(days, &y, &m, &d);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d%02u%02u", y, m, d);
  return buf;
}

}  // namespace msgx
