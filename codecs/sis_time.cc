#include "codecs/sis_time.h"

namespace msgx::sis {
namespace {

bool Digits(std::string_view s, std::size_t pos, std::size_t n, int* out) {
  int v = 0;
  for (std::size_t i = pos; i < pos + n; ++i) {
    const char c = s[i];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

char Upper(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 'a' + 'A') : c; }

int Month(std::string_view s, std::size_t pos) {
  static constexpr std::string_view kMonths = "JANFEBMARAPRMAYJUNJULAUGSEPOCTNOVDEC";
  const char a = Upper(s[pos]), b = Upper(s[pos + 1]), c = Upper(s[pos + 2]);
  for (int m = 0; m < 12; ++m) {
    const auto i = static_cast<std::size_t>(m) * 3;
    if (kMonths[i] == a && kMonths[i + 1] == b && kMonths[i + 2] == c) return m + 1;
  }
  return 0;
}

bool IsLeap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && IsLeap(y) ? 29 : kDays[m - 1];
}

std::optional<std::int64_t> Compose(int y, int mo, int d, int h, int mi, int sec) {
  if (mo < 1 || mo > 12 || d < 1 || d > DaysInMonth(y, mo) || h > 23 || mi > 59 || sec > 59) {
    return std::nullopt;
  }
  return DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
         std::int64_t{h} * 3600 + std::int64_t{mi} * 60 + sec;
}

}  // namespace

std::optional<std::int64_t> ParseLocalDateTime14(std::string_view s) {
  int y, mo, d, h, mi, sec;
  if (s.size() != 14 || !Digits(s, 0, 4, &y) || !Digits(s, 4, 2, &mo) || !Digits(s, 6, 2, &d) ||
      !Digits(s, 8, 2, &h) || !Digits(s, 10, 2, &mi) || !Digits(s, 12, 2, &sec)) {
    return std::nullopt;
  }
  return Compose(y, mo, d, h, mi, sec);
}

std::optional<std::int64_t> ParseLocalDayTime(std::string_view s) {
  int d, yy, h, mi;
  if (s.size() != 11 || !Digits(s, 0, 2, &d) || !Digits(s, 5, 2, &yy) || !Digits(s, 7, 2, &h) ||
      !Digits(s, 9, 2, &mi)) {
    return std::nullopt;
  }
  return Compose(2000 + yy, Month(s, 2), d, h, mi, 0);
}

std::optional<std::int64_t> ParseLocalDate(std::string_view s) {
  int d, yy;
  if (s.size() != 7 || !Digits(s, 0, 2, &d) || !Digits(s, 5, 2, &yy)) return std::nullopt;
  return Compose(2000 + yy, Month(s, 2), d, 0, 0, 0);
}

std::optional<std::int32_t> ParseHhmm(std::string_view s) {
  int h, m;
  if (s.size() != 4 || !Digits(s, 0, 2, &h) || !Digits(s, 2, 2, &m) || m > 59) {
    return std::nullopt;
  }
  return h * 60 + m;
}

TimeField ParseTime(std::string_view raw, TimeFormat format, const TimeZone& zone) {
  TimeField f;
  f.format = format;
  f.raw = std::string(raw);
  if (raw.empty()) {
    f.state = TimeState::kEmpty;
    return f;
  }
  std::optional<std::int64_t> local;
  switch (format) {
    case TimeFormat::kDateTime14:
      local = ParseLocalDateTime14(raw);
      break;
    case TimeFormat::kDayTime:
      local = ParseLocalDayTime(raw);
      break;
    case TimeFormat::kDate:
      local = ParseLocalDate(raw);
      break;
    case TimeFormat::kHhmm: {
      auto minutes = ParseHhmm(raw);
      if (!minutes) {
        f.state = TimeState::kUnparsable;
        return f;
      }
      f.state = TimeState::kValue;
      f.minutes = *minutes;
      return f;
    }
  }
  if (!local) {
    f.state = TimeState::kUnparsable;
    return f;
  }
  f.state = TimeState::kValue;
  f.utc_micros = zone.LocalToUtc(*local) * 1'000'000;
  return f;
}

std::string_view TimeFormatName(TimeFormat format) {
  switch (format) {
    case TimeFormat::kDateTime14:
      return "yyyyMMddHHmmss";
    case TimeFormat::kDayTime:
      return "ddMMMyyHHmm";
    case TimeFormat::kDate:
      return "ddMMMyy";
    case TimeFormat::kHhmm:
      return "HHMM";
  }
  return "?";
}

}  // namespace msgx::sis
