// The wall-clock conversions MariaDbTimeColumn applies to a DATETIME column
// of the mailbox (stream/mariadb/mariadb_time.h), in zones with DST: pure,
// no server (the column's type is learnt in mariadb_capture_test.cc).
#include "stream/mariadb/mariadb_time.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

constexpr MicrosSinceEpoch kSecond = 1'000'000;
constexpr MicrosSinceEpoch kHour = 3600 * kSecond;

TimeZone Zone(const std::string& name) {
  auto z = TimeZone::Load(name);
  EXPECT_TRUE(z.ok()) << z.status().ToString();
  return z.ok() ? std::move(z).value() : TimeZone::Fixed("UTC", 0);
}

// 2026-03-29 00:30:00 as seconds since the epoch, UTC or local.
constexpr MicrosSinceEpoch kMar29_0030 = 1'774'744'200 * kSecond;
// 2026-10-25 00:30:00.
constexpr MicrosSinceEpoch kOct25_0030 = 1'792'888'200 * kSecond;

TEST(MariaDbTimeTest, AWallClockReadingIsAnInstantInTheZoneAcrossDst) {
  const TimeZone berlin = Zone("Europe/Berlin");
  // 01:30 local is CET (+01:00), 03:30 local is CEST (+02:00).
  EXPECT_EQ(WallMicrosToUtc(kMar29_0030 + kHour, berlin), kMar29_0030);
  EXPECT_EQ(WallMicrosToUtc(kMar29_0030 + 3 * kHour + 7, berlin), kMar29_0030 + kHour + 7);
  // 02:30 does not occur: moved forward by the gap (03:30 CEST).
  EXPECT_EQ(WallMicrosToUtc(kMar29_0030 + 2 * kHour, berlin), kMar29_0030 + kHour);
  // 02:30 on 2026-10-25 occurs twice: the earlier instant (CEST).
  EXPECT_EQ(WallMicrosToUtc(kOct25_0030 + 2 * kHour, berlin), kOct25_0030);
  // Before the epoch: the sub-second part stays with its second.
  EXPECT_EQ(WallMicrosToUtc(-1, TimeZone::Fixed("X", 3600)), -3600 * kSecond - 1);
}

TEST(MariaDbTimeTest, AnInstantIsWrittenAsTheZonesReadingAndReadsBack) {
  const TimeZone berlin = Zone("Europe/Berlin");
  const TimeZone new_york = Zone("America/New_York");
  EXPECT_EQ(UtcToWallMicros(kMar29_0030, berlin), kMar29_0030 + kHour);
  EXPECT_EQ(UtcToWallMicros(kMar29_0030 + kHour, berlin), kMar29_0030 + 3 * kHour);
  EXPECT_EQ(UtcToWallMicros(kMar29_0030, new_york), kMar29_0030 - 4 * kHour);  // EDT
  EXPECT_EQ(UtcToWallMicros(kOct25_0030 + 2 * kHour, new_york),
            kOct25_0030 - 2 * kHour);  // still EDT there until 2026-11-01
  for (MicrosSinceEpoch t = kMar29_0030 - 3 * kHour; t < kMar29_0030 + 3 * kHour;
       t += 600 * kSecond) {
    EXPECT_EQ(WallMicrosToUtc(UtcToWallMicros(t + 5, berlin), berlin), t + 5) << t;
  }
}

}  // namespace
}  // namespace msgx
