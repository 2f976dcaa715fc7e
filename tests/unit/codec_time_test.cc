// SIS time formats and the TZif time-zone loader.
#include <gtest/gtest.h>

#include "codecs/sis_json.h"
#include "codecs/sis_time.h"
#include "codecs/time_zone.h"

namespace msgx::sis {
namespace {

TimeZone Load(const char* name) {
  auto z = TimeZone::Load(name);
  EXPECT_TRUE(z.ok()) << z.status().ToString();
  return z.ok() ? std::move(z).value() : TimeZone::Fixed("UTC", 0);
}

std::string Utc(std::string_view raw, TimeFormat f, const TimeZone& z) {
  TimeField t = ParseTime(raw, f, z);
  if (t.state != TimeState::kValue) return "bad";
  return FormatUtc(t.utc_micros);
}

TEST(CodecTime, ShanghaiHasNoDst) {
  const TimeZone sh = Load("Asia/Shanghai");
  EXPECT_EQ(Utc("15DEC031805", TimeFormat::kDayTime, sh), "2003-12-15T10:05:00Z");
  EXPECT_EQ(Utc("15JUL031805", TimeFormat::kDayTime, sh), "2003-07-15T10:05:00Z");
  EXPECT_EQ(Utc("20021010090311", TimeFormat::kDateTime14, sh), "2002-10-10T01:03:11Z");
  EXPECT_EQ(Utc("10SEP20", TimeFormat::kDate, sh), "2020-09-09T16:00:00Z");
  EXPECT_EQ(sh.OffsetAt(1'600'000'000), 8 * 3600);
}

TEST(CodecTime, BerlinDst) {
  const TimeZone be = Load("Europe/Berlin");
  EXPECT_EQ(Utc("15JAN211200", TimeFormat::kDayTime, be), "2021-01-15T11:00:00Z");
  EXPECT_EQ(Utc("15JUL211200", TimeFormat::kDayTime, be), "2021-07-15T10:00:00Z");
  // 2021-03-28 02:30 does not exist (02:00 → 03:00): moved forward by the gap.
  EXPECT_EQ(Utc("28MAR210230", TimeFormat::kDayTime, be), "2021-03-28T01:30:00Z");
  // 2021-10-31 02:30 occurs twice: the earlier (CEST) instant.
  EXPECT_EQ(Utc("31OCT210230", TimeFormat::kDayTime, be), "2021-10-31T00:30:00Z");
  EXPECT_EQ(Utc("31OCT210330", TimeFormat::kDayTime, be), "2021-10-31T02:30:00Z");
}

TEST(CodecTime, Shapes) {
  const TimeZone utc = TimeZone::Fixed("UTC", 0);
  EXPECT_EQ(Utc("29FEB241200", TimeFormat::kDayTime, utc), "2024-02-29T12:00:00Z");
  EXPECT_EQ(Utc("29FEB231200", TimeFormat::kDayTime, utc), "bad");
  EXPECT_EQ(Utc("32JAN210535", TimeFormat::kDayTime, utc), "bad");
  EXPECT_EQ(Utc("15XYZ031805", TimeFormat::kDayTime, utc), "bad");
  EXPECT_EQ(Utc("15DEC032405", TimeFormat::kDayTime, utc), "bad");
  EXPECT_EQ(Utc("15DEC03180", TimeFormat::kDayTime, utc), "bad");
  EXPECT_EQ(Utc("15dec031805", TimeFormat::kDayTime, utc), "2003-12-15T18:05:00Z");
  EXPECT_EQ(Utc("2002101009031", TimeFormat::kDateTime14, utc), "bad");
  EXPECT_EQ(Utc("20021010246000", TimeFormat::kDateTime14, utc), "bad");
  EXPECT_EQ(ParseHhmm("0200"), 120);
  EXPECT_EQ(ParseHhmm("0260"), std::nullopt);
  EXPECT_EQ(ParseHhmm("2h00"), std::nullopt);
  EXPECT_EQ(ParseTime("", TimeFormat::kDayTime, utc).state, TimeState::kEmpty);
  EXPECT_EQ(ParseTime("x", TimeFormat::kHhmm, utc).state, TimeState::kUnparsable);
}

TEST(CodecTime, LoaderRefusesBadNamesAndFiles) {
  EXPECT_EQ(TimeZone::Load("../etc/passwd").status().error_class(), ErrorClass::kConfig);
  EXPECT_EQ(TimeZone::Load("Nowhere/Atlantis").status().error_class(), ErrorClass::kConfig);
  EXPECT_FALSE(TimeZone::FromTzif("x", "TZif2").ok());
  EXPECT_FALSE(TimeZone::FromTzif("x", std::string(100, 'x')).ok());
}

}  // namespace
}  // namespace msgx::sis
