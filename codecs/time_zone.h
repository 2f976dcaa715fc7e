// TimeZone: an immutable IANA time zone loaded from a TZif file, used to turn
// local airport times (docs/codec.md#times) into UTC instants.
//
// g++ 12's libstdc++ has no std::chrono time-zone database, so the zone is
// read once at start-up from /usr/share/zoneinfo (the system tzdata package)
// and then passed by reference into the decoder; converting a time does no
// I/O and no allocation.
//
// Coverage: before the file's last stored transition, the stored transitions.
// At and after it (and everywhere in a file that stores no transitions), the
// v2+ footer's POSIX TZ rule (codecs/posix_tz.h), evaluated for the year in
// question: DST keeps changing past 2037 in Debian's "fat" files, and a
// "slim" file that stores few or no transitions gives the right offsets. A
// footer without DST gives its fixed offset; an empty footer (and a v1 file,
// which has none) leaves the last stored offset in effect.
//
// Thread-safety: immutable after construction; share freely.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "codecs/posix_tz.h"

namespace msgx {

class TimeZone {
 public:
  // Reads `<zoneinfo_dir>/<name>` (I/O: call at start-up only). Fails with
  // kConfig when the name is not a plain zone name (no "..", not absolute),
  // the file is missing, or it is not a valid TZif file.
  static Result<TimeZone> Load(std::string_view name,
                               const std::string& zoneinfo_dir = "/usr/share/zoneinfo");
  // Only the bytes of `<zoneinfo_dir>/<name>`, with Load()'s checks of the
  // name and the file (not of its contents): what a SETTINGS record keeps.
  static Result<std::string> ReadTzif(std::string_view name,
                                      const std::string& zoneinfo_dir = "/usr/share/zoneinfo");
  // Parses TZif bytes (versions 1-4). kConfig on a malformed file, a v2+
  // footer included ("bad TZif file (footer)": missing, not enclosed in
  // newlines, or not a TZ string that posix_tz.h accepts).
  static Result<TimeZone> FromTzif(std::string_view name, std::string_view bytes);
  // A zone with one fixed UTC offset (seconds east of UTC); for tests.
  static TimeZone Fixed(std::string name, std::int32_t offset_seconds);

  const std::string& name() const { return name_; }

  // Offset (seconds east of UTC) in effect at the instant `utc_seconds`.
  std::int32_t OffsetAt(std::int64_t utc_seconds) const;

  // The instant of a local wall-clock time given as seconds since
  // 1970-01-01T00:00 local. A time that occurs twice (DST ends) maps to the
  // earlier instant; a time that does not occur (DST gap) is moved forward by
  // the length of the gap (02:30 in a 02:00→03:00 gap becomes 03:30).
  // Assumes consecutive changes of offset are more than a day apart (true of
  // every tzdata zone).
  std::int64_t LocalToUtc(std::int64_t local_seconds) const;

 private:
  TimeZone() = default;

  std::string name_;
  std::int32_t initial_offset_ = 0;        // before the first transition
  std::vector<std::int64_t> transitions_;  // UTC seconds, ascending
  std::vector<std::int32_t> offsets_;      // offset from transitions_[i] on
  std::optional<PosixTz> footer_;          // from transitions_.back() on
};

// Days since 1970-01-01 of a proleptic Gregorian civil date.
std::int64_t DaysFromCivil(std::int64_t y, unsigned m, unsigned d);

}  // namespace msgx
