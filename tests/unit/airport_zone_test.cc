#include "state/airport_zone.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

// +01:00 before 1,000,000 s after the epoch (UTC), +02:00 from then on.
class SteppedZone final : public AirportZone {
 public:
  std::int32_t OffsetSecondsAt(std::int64_t utc_seconds) const override {
    return utc_seconds < 1'000'000 ? 3600 : 7200;
  }
};

TEST(AirportZoneTest, AWallClockReadingIsTakenInTheZone) {
  const FixedZone shanghai(8 * 3600);
  // 2026-12-01 08:00:00.5 in Shanghai, read as if UTC, is 00:00:00.5 UTC.
  const MicrosSinceEpoch wall = 1'796'112'000'500'000;
  EXPECT_EQ(AirportWallClockToUtc(wall, shanghai), wall - 8LL * 3600 * 1'000'000);
  EXPECT_EQ(AirportWallClockToUtc(wall, FixedZone(0)), wall);
  EXPECT_EQ(AirportWallClockToUtc(wall, FixedZone(-5 * 3600)), wall + 5LL * 3600 * 1'000'000);
  // Either side of a transition, the offset in force at the instant.
  const SteppedZone stepped;
  EXPECT_EQ(AirportWallClockToUtc((990'000 + 3600) * 1'000'000LL, stepped), 990'000 * 1'000'000LL);
  EXPECT_EQ(AirportWallClockToUtc((1'010'000 + 7200) * 1'000'000LL, stepped),
            1'010'000 * 1'000'000LL);
  // A reading whose naive offset is the wrong side of the transition.
  // (1,002,600 read as UTC is past the transition, the instant is not.)
  EXPECT_EQ(AirportWallClockToUtc((999'000 + 3600) * 1'000'000LL, stepped), 999'000 * 1'000'000LL);
}

}  // namespace
}  // namespace msgx
