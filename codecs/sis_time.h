// Parsing of the SIS time formats (docs/codec.md#times) into sis::TimeField.
//
//   yyyyMMddHHmmss  META/DTTM                         20021010090311
//   ddMMMyyHHmm     times in bodies, yy means 20yy    15DEC031805
//   ddMMMyy         dates                             10SEP20
//   HHMM            durations / times of day          0200  (minutes = H*60+M)
//
// All are local airport time, converted with the given TimeZone. The month
// abbreviation is English, matched case-insensitively. Fields are range
// checked (day within the month, hour < 24, minute and second < 60; for HHMM
// the hours may run to 99 because it is also a duration).
//
// Pure functions, no I/O; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "codecs/sis_message.h"
#include "codecs/time_zone.h"

namespace msgx::sis {

// Local wall-clock seconds since 1970-01-01T00:00 local, or nullopt when the
// text is not exactly that shape or out of range.
std::optional<std::int64_t> ParseLocalDateTime14(std::string_view s);
std::optional<std::int64_t> ParseLocalDayTime(std::string_view s);
std::optional<std::int64_t> ParseLocalDate(std::string_view s);
// Minutes (H*60+M).
std::optional<std::int32_t> ParseHhmm(std::string_view s);

// Parses trimmed text `raw` of an element that is present. Empty text gives
// kEmpty; a good value kValue; anything else kUnparsable (raw kept).
TimeField ParseTime(std::string_view raw, TimeFormat format, const TimeZone& zone);

// "yyyyMMddHHmmss" etc. name of a format, for error messages.
std::string_view TimeFormatName(TimeFormat format);

}  // namespace msgx::sis
