#include "codecs/posix_tz.h"

#include "codecs/time_zone.h"  // DaysFromCivil

namespace msgx {
namespace {

constexpr std::int64_t kDay = 86400;
// 400 Gregorian years: the calendar, weekdays included, repeats after them.
constexpr std::int64_t kEra = 146097 * kDay;

bool IsAlpha(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Consumes a zone name: 3+ letters, or 3+ of [A-Za-z0-9+-] within <>.
bool ParseName(std::string_view* s) {
  std::size_t n = 0;
  if (!s->empty() && s->front() == '<') {
    n = 1;
    while (n < s->size() &&
           (IsAlpha((*s)[n]) || IsDigit((*s)[n]) || (*s)[n] == '+' || (*s)[n] == '-')) {
      ++n;
    }
    if (n < 4 || n >= s->size() || (*s)[n] != '>') return false;
    s->remove_prefix(n + 1);
    return true;
  }
  while (n < s->size() && IsAlpha((*s)[n])) ++n;
  if (n < 3) return false;
  s->remove_prefix(n);
  return true;
}

// Consumes 1..max_digits decimal digits with a value of at most `max`.
bool ParseNumber(std::string_view* s, std::size_t max_digits, int max, int* out) {
  std::size_t n = 0;
  int v = 0;
  while (n < s->size() && n < max_digits && IsDigit((*s)[n])) {
    v = v * 10 + ((*s)[n] - '0');
    ++n;
  }
  if (n == 0 || v > max) return false;
  s->remove_prefix(n);
  *out = v;
  return true;
}

// Consumes [+-]hh[:mm[:ss]] with hh at most `max_hours` (as many digits as
// it needs), mm and ss two digits 00-59; the signed total in seconds.
bool ParseHms(std::string_view* s, int max_hours, std::int32_t* out) {
  int sign = 1;
  if (!s->empty() && (s->front() == '+' || s->front() == '-')) {
    if (s->front() == '-') sign = -1;
    s->remove_prefix(1);
  }
  int h = 0, m = 0, sec = 0;
  if (!ParseNumber(s, max_hours >= 100 ? 3 : 2, max_hours, &h)) return false;
  if (!s->empty() && s->front() == ':') {
    s->remove_prefix(1);
    if (s->size() < 2 || !IsDigit((*s)[1]) || !ParseNumber(s, 2, 59, &m)) return false;
    if (!s->empty() && s->front() == ':') {
      s->remove_prefix(1);
      if (s->size() < 2 || !IsDigit((*s)[1]) || !ParseNumber(s, 2, 59, &sec)) return false;
    }
  }
  *out = sign * (h * 3600 + m * 60 + sec);
  return true;
}

bool IsLeap(std::int64_t y) { return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0); }

// The proleptic Gregorian year of a day counted from 1970-01-01 (H. Hinnant's
// civil_from_days, year only).
std::int64_t YearOfDays(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  return static_cast<std::int64_t>(yoe) + era * 400 + (mp >= 10 ? 1 : 0);
}

// 0 = Sunday; 1970-01-01 was a Thursday.
int Weekday(std::int64_t days) { return static_cast<int>(((days % 7) + 11) % 7); }

}  // namespace

bool PosixTz::ParseChange(std::string_view* s, Change* c) {
  if (s->empty() || s->front() != ',') return false;
  s->remove_prefix(1);
  if (s->empty()) return false;
  if (s->front() == 'M') {
    s->remove_prefix(1);
    c->kind = Change::Kind::kMonthWeekDay;
    if (!ParseNumber(s, 2, 12, &c->month) || c->month < 1) return false;
    if (s->empty() || s->front() != '.') return false;
    s->remove_prefix(1);
    if (!ParseNumber(s, 1, 5, &c->week) || c->week < 1) return false;
    if (s->empty() || s->front() != '.') return false;
    s->remove_prefix(1);
    if (!ParseNumber(s, 1, 6, &c->weekday)) return false;
  } else if (s->front() == 'J') {
    s->remove_prefix(1);
    c->kind = Change::Kind::kJulian;
    if (!ParseNumber(s, 3, 365, &c->day) || c->day < 1) return false;
  } else {
    c->kind = Change::Kind::kZeroBased;
    if (!ParseNumber(s, 3, 365, &c->day)) return false;
  }
  c->time = 7200;
  if (!s->empty() && s->front() == '/') {
    s->remove_prefix(1);
    if (!ParseHms(s, 167, &c->time)) return false;
  }
  return true;
}

std::optional<PosixTz> PosixTz::Parse(std::string_view tz) {
  std::string_view s = tz;
  PosixTz r;
  std::int32_t west = 0;
  if (!ParseName(&s) || !ParseHms(&s, 24, &west)) return std::nullopt;
  r.std_offset_ = -west;
  r.dst_offset_ = r.std_offset_;
  if (s.empty()) return r;
  if (!ParseName(&s)) return std::nullopt;
  r.has_dst_ = true;
  r.dst_offset_ = r.std_offset_ + 3600;
  if (!s.empty() && s.front() != ',') {
    if (!ParseHms(&s, 24, &west)) return std::nullopt;
    r.dst_offset_ = -west;
  }
  if (!ParseChange(&s, &r.start_) || !ParseChange(&s, &r.end_) || !s.empty()) {
    return std::nullopt;
  }
  return r;
}

std::int64_t PosixTz::ChangeUtc(const Change& c, std::int64_t year, std::int32_t before) {
  std::int64_t day = 0;
  switch (c.kind) {
    case Change::Kind::kJulian:
      day = DaysFromCivil(year, 1, 1) + c.day - 1 + (IsLeap(year) && c.day >= 60 ? 1 : 0);
      break;
    case Change::Kind::kZeroBased:
      day = DaysFromCivil(year, 1, 1) + c.day;
      break;
    case Change::Kind::kMonthWeekDay: {
      const auto m = static_cast<unsigned>(c.month);
      const std::int64_t first = DaysFromCivil(year, m, 1);
      const std::int64_t next =
          m == 12 ? DaysFromCivil(year + 1, 1, 1) : DaysFromCivil(year, m + 1, 1);
      day = first + (c.weekday - Weekday(first) + 7) % 7 + std::int64_t{7} * (c.week - 1);
      while (day >= next) day -= 7;  // week 5: the last such weekday
      break;
    }
  }
  return day * kDay + c.time - before;
}

std::int32_t PosixTz::OffsetAt(std::int64_t utc_seconds) const {
  if (!has_dst_) return std_offset_;
  // The same instant of the 400-year cycle starting 1970: no overflow below.
  std::int64_t t = utc_seconds % kEra;
  if (t < 0) t += kEra;
  const std::int64_t year = YearOfDays(t / kDay);
  // The latest change at or before t among the years around t's (a change
  // moves at most 167 h + 25 h off its date, so it lies within these). On a
  // tie the later one in year order wins: one year's end coinciding with the
  // next one's start means DST all year.
  std::int64_t latest = 0;
  bool found = false;
  bool dst = false;
  for (std::int64_t y = year - 2; y <= year + 1; ++y) {
    const std::int64_t start = ChangeUtc(start_, y, std_offset_);
    const std::int64_t end = ChangeUtc(end_, y, dst_offset_);
    if (start <= t && (!found || start >= latest)) {
      latest = start;
      found = true;
      dst = true;
    }
    if (end <= t && (!found || end >= latest)) {
      latest = end;
      found = true;
      dst = false;
    }
  }
  return dst ? dst_offset_ : std_offset_;
}

}  // namespace msgx
