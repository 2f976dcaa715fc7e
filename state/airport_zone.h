// AirportZone: the airport's UTC offset at an instant, and the two airport
// time computations the fold needs ("the day" of a record, ISO-8601 text).
//
// The fold's "now" is a log record's append time in airport time
// (docs/fold.md#determinism); this interface is how pure code turns an instant
// into airport time without reading a time-zone database. The codec's TimeZone
// (codecs/time_zone.h) is adapted to it at start-up; tests use FixedZone.
//
// Thread-safety: implementations are immutable; share freely.
#pragma once

#include <cstdint>
#include <string>

#include "base/clock.h"

namespace msgx {

class AirportZone {
 public:
  AirportZone();
  // A copy is another zone object, with an id of its own.
  AirportZone(const AirportZone&) : AirportZone() {}
  AirportZone& operator=(const AirportZone&) { return *this; }
  virtual ~AirportZone() = default;
  // Seconds east of UTC in effect at `utc_seconds`. Must be pure.
  virtual std::int32_t OffsetSecondsAt(std::int64_t utc_seconds) const = 0;

  // This zone object's number, unique in the process and never reused (an
  // address can be): what a rendering kept for one zone is keyed by
  // (SharedEntries::AppendRendering, state/flight.h).
  std::uint64_t id() const { return id_; }

 private:
  std::uint64_t id_;
};

// A zone with one fixed offset (Asia/Shanghai has had +08:00 since 1991).
class FixedZone final : public AirportZone {
 public:
  explicit FixedZone(std::int32_t offset_seconds) : offset_(offset_seconds) {}
  std::int32_t OffsetSecondsAt(std::int64_t) const override { return offset_; }

 private:
  std::int32_t offset_;
};

// "2003-12-15T18:05:00+08:00" (sub-second digits only when non-zero, as
// ".ffffff"). Deterministic for a given zone.
std::string FormatAirportIso8601(MicrosSinceEpoch utc_micros, const AirportZone& zone);
// The same, appended to `out`.
void AppendAirportIso8601(MicrosSinceEpoch utc_micros, const AirportZone& zone, std::string* out);

// The instant at which the airport-local calendar day containing
// `utc_micros` starts.
MicrosSinceEpoch StartOfAirportDay(MicrosSinceEpoch utc_micros, const AirportZone& zone);

// The instant of a zone-less airport wall-clock reading, given as if it
// were UTC (how a TIMESTAMP column reads, docs/capture.md): the reading less
// the offset in force then. In a DST gap or overlap, one of the candidates.
MicrosSinceEpoch AirportWallClockToUtc(MicrosSinceEpoch wall_micros, const AirportZone& zone);

// The airport-local date of `utc_micros` as "yyyyMMdd".
std::string AirportDate(MicrosSinceEpoch utc_micros, const AirportZone& zone);

}  // namespace msgx
