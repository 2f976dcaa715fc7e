// PosixTz: the POSIX TZ rule string that ends a TZif v2+ file (the "footer",
// RFC 8536 §3.3), parsed once and then evaluated for any instant. TimeZone
// uses it for instants at or after the file's last stored transition.
//
// Grammar accepted (POSIX, with the two RFC 8536 §3.3.1 extensions):
//   std offset [dst [offset] ,start[/time],end[/time]]
//   name:   3+ letters (CET), or 3+ of [A-Za-z0-9+-] in angle brackets (<+0330>)
//   offset: [+-]hh[:mm[:ss]], hh 0-24; POSIX sign, west of UTC positive
//           ("CET-1" is UTC+1); the dst offset defaults to std + 1 h
//   start, end (the date DST starts and ends):
//     Mm.w.d  month 1-12, week 1-5 (5 = the last), weekday 0-6 (0 = Sunday)
//     Jn      day 1-365 of the year, Feb 29 never counted (J60 is March 1)
//     n       day 0-365 of the year, zero-based, Feb 29 counted
//   time:   [+-]hh[:mm[:ss]], hh 0-167 (RFC 8536: signed and past 24 h; so
//           "/-1" is 23:00 the day before, "/26" 02:00 the day after), local
//           time in effect before the change (standard time for start, DST
//           for end); defaults to 02:00:00
// A dst name without a rule (whose meaning POSIX leaves to the
// implementation) is refused; so is a leading ':' (an implementation-defined
// file name, never in a TZif footer).
//
// Evaluation: the rule applies each (proleptic Gregorian) year; DST may span
// the new year (southern hemisphere: start later in the year than end). When
// one year's end coincides with the next year's start, DST holds throughout
// ("all year DST", RFC 8536 §3.3.1, e.g. "EST5EDT,0/0,J365/25").
//
// OffsetAt is pure: no I/O, no allocation, no clock. Defined for every
// int64 instant (the Gregorian calendar repeats every 400 years, so the rule
// is evaluated in the equivalent instant of 1970-2369).
//
// Thread-safety: immutable after Parse; share freely.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace msgx {

class PosixTz {
 public:
  // The rule of `tz` (no surrounding newlines), or nullopt when `tz` is not
  // a TZ string of the grammar above (an empty string included).
  static std::optional<PosixTz> Parse(std::string_view tz);

  bool has_dst() const { return has_dst_; }
  // Seconds east of UTC (the TimeZone convention, not the POSIX sign).
  std::int32_t std_offset() const { return std_offset_; }
  // Equal to std_offset() when !has_dst().
  std::int32_t dst_offset() const { return dst_offset_; }

  // Offset (seconds east of UTC) in effect at the instant `utc_seconds`.
  std::int32_t OffsetAt(std::int64_t utc_seconds) const;

 private:
  // A DST start or end: the date rule and the local time of day.
  struct Change {
    enum class Kind : std::uint8_t { kMonthWeekDay, kJulian, kZeroBased };
    Kind kind = Kind::kMonthWeekDay;
    int month = 0;             // kMonthWeekDay: 1-12
    int week = 0;              // kMonthWeekDay: 1-5
    int weekday = 0;           // kMonthWeekDay: 0-6
    int day = 0;               // kJulian: 1-365; kZeroBased: 0-365
    std::int32_t time = 7200;  // seconds after local midnight of the day
  };

  PosixTz() = default;

  // Consumes ",date[/time]" from the front of `*s`; false when malformed.
  static bool ParseChange(std::string_view* s, Change* c);

  // The UTC instant at which `c` happens in `year`, with `before` the offset
  // in effect just before it.
  static std::int64_t ChangeUtc(const Change& c, std::int64_t year, std::int32_t before);

  bool has_dst_ = false;
  std::int32_t std_offset_ = 0;
  std::int32_t dst_offset_ = 0;
  Change start_;
  Change end_;
};

}  // namespace msgx
