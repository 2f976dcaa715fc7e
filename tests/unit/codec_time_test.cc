// SIS time formats and the TZif time-zone loader.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "codecs/posix_tz.h"
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

// A "slim" TZif v2 file: no transitions, one local time type (the offset of
// `type0`), then the footer "\n" + footer + "\n" (`tail` replaces that
// footer when given, to build malformed ones).
std::string SlimTzif(std::string_view footer, std::int32_t type0 = 0,
                     const std::string* tail = nullptr,
                     const std::vector<std::pair<std::int64_t, unsigned char>>& transitions = {}) {
  auto be32 = [](std::string* out, std::uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
  };
  // A block of 8-byte times (v2) holds `transitions` and a second type,
  // type0 + 1 h; the v1 block holds neither.
  auto block = [&](std::string* out, bool v2) {
    const auto timecnt = static_cast<std::uint32_t>(v2 ? transitions.size() : 0);
    const std::uint32_t typecnt = v2 && !transitions.empty() ? 2 : 1;
    out->append("TZif2");
    out->append(15, '\0');
    // isutcnt isstdcnt leapcnt timecnt typecnt charcnt
    for (std::uint32_t v : {0U, 0U, 0U, timecnt, typecnt, 4U}) be32(out, v);
    if (v2) {
      for (const auto& [t, type] : transitions) {
        be32(out, static_cast<std::uint32_t>(static_cast<std::uint64_t>(t) >> 32));
        be32(out, static_cast<std::uint32_t>(t));
      }
      for (const auto& [t, type] : transitions) out->push_back(static_cast<char>(type));
    }
    for (std::uint32_t i = 0; i < typecnt; ++i) {
      be32(out, static_cast<std::uint32_t>(type0 + static_cast<std::int32_t>(i) * 3600));
      out->push_back(static_cast<char>(i));  // isdst
      out->push_back('\0');                  // desigidx
    }
    out->append("XXX", 4);  // the designation, NUL included
  };
  std::string b;
  block(&b, false);  // the v1 header and data block
  block(&b, true);   // the v2 header and data block
  if (tail != nullptr) return b + *tail;
  return b + "\n" + std::string(footer) + "\n";
}

TimeZone Slim(std::string_view footer) {
  auto z = TimeZone::FromTzif("slim", SlimTzif(footer));
  EXPECT_TRUE(z.ok()) << footer << ": " << z.status().ToString();
  return z.ok() ? std::move(z).value() : TimeZone::Fixed("UTC", 12345);
}

// Seconds since the epoch of a UTC civil time.
std::int64_t At(std::int64_t y, unsigned mo, unsigned d, std::int64_t h = 0, std::int64_t mi = 0,
                std::int64_t s = 0) {
  return DaysFromCivil(y, mo, d) * 86400 + h * 3600 + mi * 60 + s;
}

// `z` changes from offset `before` to `after` exactly at `t` (UTC seconds).
void ExpectChange(const TimeZone& z, std::int64_t t, int before_hours, int after_hours) {
  EXPECT_EQ(z.OffsetAt(t - 1), before_hours * 3600) << z.name() << " at " << t - 1;
  EXPECT_EQ(z.OffsetAt(t), after_hours * 3600) << z.name() << " at " << t;
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

TEST(CodecTimeZone, BerlinFooterPast2037) {
  const TimeZone be = Load("Europe/Berlin");
  // 2050: last Sunday of March (27th) and of October (30th), 01:00 UTC.
  ExpectChange(be, 2'531'955'600, 1, 2);
  ExpectChange(be, 2'550'704'400, 2, 1);
  EXPECT_EQ(be.OffsetAt(At(2050, 1, 15)), 3600);
  EXPECT_EQ(be.OffsetAt(At(2050, 7, 15)), 7200);
  // 2038, the first year after the stored transitions.
  ExpectChange(be, At(2038, 3, 28, 1), 1, 2);
  ExpectChange(be, At(2038, 10, 31, 1), 2, 1);
  // 2100 (no Feb 29): March 28th and October 31st.
  ExpectChange(be, At(2100, 3, 28, 1), 1, 2);
  ExpectChange(be, At(2100, 10, 31, 1), 2, 1);
  // Within the stored range, as before.
  ExpectChange(be, 1'616'893'200, 1, 2);  // 2021-03-28T01:00Z
  ExpectChange(be, 1'635'642'000, 2, 1);  // 2021-10-31T01:00Z
  EXPECT_EQ(be.OffsetAt(At(1980, 7, 1)), 7200);
  EXPECT_EQ(be.OffsetAt(At(1975, 7, 1)), 3600);  // no DST in West Germany then
}

TEST(CodecTimeZone, SlimFileMatchesFatFile) {
  const TimeZone fat_berlin = Load("Europe/Berlin");
  const TimeZone slim_berlin = Slim("CET-1CEST,M3.5.0,M10.5.0/3");
  const TimeZone fat_sydney = Load("Australia/Sydney");
  const TimeZone slim_sydney = Slim("AEST-10AEDT,M10.1.0,M4.1.0/3");
  // Every hour of a leap year in the stored range and of a year past it, and
  // the second before each hour (changes fall on the hour in both zones).
  for (std::int64_t y : {2024, 2030, 2050}) {
    for (std::int64_t t = At(y, 1, 1); t < At(y + 1, 1, 1); t += 3600) {
      ASSERT_EQ(slim_berlin.OffsetAt(t), fat_berlin.OffsetAt(t)) << t;
      ASSERT_EQ(slim_berlin.OffsetAt(t - 1), fat_berlin.OffsetAt(t - 1)) << t - 1;
      ASSERT_EQ(slim_berlin.LocalToUtc(t + 1800), fat_berlin.LocalToUtc(t + 1800)) << t;
      ASSERT_EQ(slim_sydney.OffsetAt(t), fat_sydney.OffsetAt(t)) << t;
      ASSERT_EQ(slim_sydney.OffsetAt(t - 1), fat_sydney.OffsetAt(t - 1)) << t - 1;
      ASSERT_EQ(slim_sydney.LocalToUtc(t + 1800), fat_sydney.LocalToUtc(t + 1800)) << t;
    }
  }
  ExpectChange(slim_berlin, At(2024, 3, 31, 1), 1, 2);
  ExpectChange(slim_berlin, At(2024, 10, 27, 1), 2, 1);
}

TEST(CodecTimeZone, SouthernHemisphereSlim) {
  const TimeZone sy = Slim("AEST-10AEDT,M10.1.0,M4.1.0/3");
  // 2050: DST ends Sunday April 3rd 03:00 AEDT (Saturday 16:00 UTC) and
  // starts Sunday October 2nd 02:00 AEST (Saturday 16:00 UTC).
  ExpectChange(sy, 2'532'528'000, 11, 10);
  ExpectChange(sy, 2'548'252'800, 10, 11);
  EXPECT_EQ(sy.OffsetAt(At(2050, 1, 1)), 11 * 3600);  // summer spans the new year
  EXPECT_EQ(sy.OffsetAt(At(2049, 12, 31, 23, 59, 59)), 11 * 3600);
  EXPECT_EQ(sy.OffsetAt(At(2050, 7, 1)), 10 * 3600);
  EXPECT_EQ(sy.OffsetAt(At(2050, 12, 31, 12)), 11 * 3600);
  // Gap: 2050-10-02 02:30 local does not exist → 03:30 AEDT.
  EXPECT_EQ(Utc("02OCT500230", TimeFormat::kDayTime, sy), "2050-10-01T16:30:00Z");
  // Overlap: 2050-04-03 02:30 local occurs twice → the AEDT one.
  EXPECT_EQ(Utc("03APR500230", TimeFormat::kDayTime, sy), "2050-04-02T15:30:00Z");
  EXPECT_EQ(Utc("03APR500330", TimeFormat::kDayTime, sy), "2050-04-02T17:30:00Z");
}

TEST(CodecTimeZone, BerlinLocalToUtcPast2037) {
  for (const TimeZone& be : {Load("Europe/Berlin"), Slim("CET-1CEST,M3.5.0,M10.5.0/3")}) {
    // 2050-03-27 02:30 does not exist (02:00 → 03:00): moved forward by the gap.
    EXPECT_EQ(Utc("27MAR500230", TimeFormat::kDayTime, be), "2050-03-27T01:30:00Z");
    EXPECT_EQ(Utc("27MAR500159", TimeFormat::kDayTime, be), "2050-03-27T00:59:00Z");
    EXPECT_EQ(Utc("27MAR500300", TimeFormat::kDayTime, be), "2050-03-27T01:00:00Z");
    // 2050-10-30 02:30 occurs twice: the earlier (CEST) instant.
    EXPECT_EQ(Utc("30OCT500230", TimeFormat::kDayTime, be), "2050-10-30T00:30:00Z");
    EXPECT_EQ(Utc("30OCT500330", TimeFormat::kDayTime, be), "2050-10-30T02:30:00Z");
    EXPECT_EQ(Utc("15JUL501200", TimeFormat::kDayTime, be), "2050-07-15T10:00:00Z");
    EXPECT_EQ(Utc("15DEC501200", TimeFormat::kDayTime, be), "2050-12-15T11:00:00Z");
  }
}

TEST(CodecTimeZone, FooterDateAndTimeForms) {
  // Jn: Feb 29 never counted, so J60 is March 1 in leap and common years.
  const TimeZone j = Slim("AAA0BBB,J60/3,J305/4");
  ExpectChange(j, At(2024, 3, 1, 3), 0, 1);
  ExpectChange(j, At(2023, 3, 1, 3), 0, 1);
  ExpectChange(j, At(2024, 11, 1, 3), 1, 0);  // 04:00 BBB
  ExpectChange(j, At(2023, 11, 1, 3), 1, 0);
  // n: zero-based and Feb 29 counted: day 59 is Feb 29 in 2024, March 1 in 2023.
  const TimeZone n = Slim("AAA0BBB,59,304");
  ExpectChange(n, At(2024, 2, 29, 2), 0, 1);
  ExpectChange(n, At(2023, 3, 1, 2), 0, 1);
  ExpectChange(n, At(2024, 10, 31, 1), 1, 0);  // 02:00 BBB; day 304 is Oct 31 in 2024
  ExpectChange(n, At(2023, 11, 1, 1), 1, 0);
  // Negative times (America/Nuuk: -1 is 23:00 the day before, 0 midnight).
  const TimeZone nuuk = Slim("<-02>2<-01>,M3.5.0/-1,M10.5.0/0");
  ExpectChange(nuuk, At(2050, 3, 27, 1), -2, -1);  // Saturday 23:00 -02
  ExpectChange(nuuk, At(2050, 10, 30, 1), -1, -2);
  // Over 24 h (Asia/Jerusalem: Thursday 26:00 is Friday 02:00).
  const TimeZone jer = Slim("IST-2IDT,M3.4.4/26,M10.5.0");
  ExpectChange(jer, At(2050, 3, 25, 0), 2, 3);
  ExpectChange(jer, At(2050, 10, 29, 23), 3, 2);
  // Hours past 100, and minutes and seconds in times and offsets.
  const TimeZone far = Slim("AAA-0:30BBB-1:45:30,M1.1.0/100:01:02,J300/-99:30");
  EXPECT_EQ(far.OffsetAt(At(2050, 6, 1)), 6330);
  // First Sunday of January 2050 is the 2nd; +100:01:02 is Jan 6th 04:01:02 local.
  EXPECT_EQ(far.OffsetAt(At(2050, 1, 6, 3, 31, 1)), 1800);
  EXPECT_EQ(far.OffsetAt(At(2050, 1, 6, 3, 31, 2)), 6330);
  // J300 is Oct 27th; -99:30 is Oct 22nd 20:30 local (BBB) = 18:44:30 UTC.
  EXPECT_EQ(far.OffsetAt(At(2050, 10, 22, 18, 44, 29)), 6330);
  EXPECT_EQ(far.OffsetAt(At(2050, 10, 22, 18, 44, 30)), 1800);
  // DST all year (RFC 8536 §3.3.1): no standard time at any instant.
  const TimeZone all = Slim("EST5EDT,0/0,J365/25");
  for (std::int64_t y : {2023, 2024, 2050, 2100}) {
    for (std::int64_t t : {At(y, 1, 1), At(y, 1, 1, 5) - 1, At(y, 1, 1, 5), At(y, 6, 1),
                           At(y, 12, 31, 23, 59, 59)}) {
      EXPECT_EQ(all.OffsetAt(t), -4 * 3600) << t;
    }
  }
  // The default DST offset is std + 1 h; an explicit one may differ by less.
  const TimeZone ny = Slim("EST5EDT,M3.2.0,M11.1.0");
  ExpectChange(ny, At(2050, 3, 13, 7), -5, -4);
  ExpectChange(ny, At(2050, 11, 6, 6), -4, -5);
  const TimeZone lh = Slim("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0");
  EXPECT_EQ(lh.OffsetAt(2'532'524'400 - 1), 11 * 3600);
  EXPECT_EQ(lh.OffsetAt(2'532'524'400), 37800);
  EXPECT_EQ(lh.OffsetAt(2'548'251'000 - 1), 37800);
  EXPECT_EQ(lh.OffsetAt(2'548'251'000), 11 * 3600);
}

TEST(CodecTimeZone, FooterWithoutDst) {
  // Quoted names and minutes; POSIX sign (west positive).
  EXPECT_EQ(Slim("<+0330>-3:30").OffsetAt(At(2050, 7, 1)), 12600);
  EXPECT_EQ(Slim("<-0330>3:30").OffsetAt(At(2050, 7, 1)), -12600);
  EXPECT_EQ(Slim("<+03>-3").OffsetAt(At(1900, 1, 1)), 3 * 3600);
  EXPECT_EQ(Slim("CET-1").OffsetAt(0), 3600);
  EXPECT_EQ(Slim("XXX+1:02:03").OffsetAt(0), -3723);
  // Shanghai's fat file: stored transitions, then CST-8.
  EXPECT_EQ(Load("Asia/Shanghai").OffsetAt(At(2050, 7, 1)), 8 * 3600);
  // An empty footer: the last stored offset (here the only type's).
  auto empty = TimeZone::FromTzif("e", SlimTzif("", 5400));
  ASSERT_TRUE(empty.ok()) << empty.status().ToString();
  EXPECT_EQ(empty->OffsetAt(At(2050, 7, 1)), 5400);
  // The footer rule wins over the type of a file with no transitions.
  auto slim = TimeZone::FromTzif("s", SlimTzif("CET-1CEST,M3.5.0,M10.5.0/3", 5400));
  ASSERT_TRUE(slim.ok()) << slim.status().ToString();
  EXPECT_EQ(slim->OffsetAt(At(2050, 7, 1)), 7200);
  EXPECT_EQ(slim->OffsetAt(At(1950, 1, 1)), 3600);
}

TEST(CodecTimeZone, PosixTzParsesTzdataFooters) {
  auto ny = PosixTz::Parse("EST5EDT,M3.2.0,M11.1.0");
  ASSERT_TRUE(ny.has_value());
  EXPECT_TRUE(ny->has_dst());
  EXPECT_EQ(ny->std_offset(), -5 * 3600);
  EXPECT_EQ(ny->dst_offset(), -4 * 3600);
  auto teh = PosixTz::Parse("<+0330>-3:30");
  ASSERT_TRUE(teh.has_value());
  EXPECT_FALSE(teh->has_dst());
  EXPECT_EQ(teh->std_offset(), 12600);
  EXPECT_EQ(teh->dst_offset(), 12600);
  // Any int64 instant: the rule repeats every 400 years.
  EXPECT_EQ(ny->OffsetAt(At(2450, 7, 1)), -4 * 3600);
  EXPECT_EQ(ny->OffsetAt(At(-1950, 1, 1)), -5 * 3600);
  EXPECT_EQ(ny->OffsetAt(INT64_MAX), ny->OffsetAt(INT64_MAX - 146097LL * 86400));
  EXPECT_EQ(ny->OffsetAt(INT64_MIN), ny->OffsetAt(INT64_MIN + 146097LL * 86400));
}

TEST(CodecTimeZone, MalformedFooterIsConfig) {
  for (const char* footer : {
           "CET",                           // no offset
           "CET-",                          // sign without hours
           "CE-1",                          // name under 3 letters
           "<+03-3",                        // unclosed quote
           "<+3>-3",                        // quoted name under 3 characters
           "<+0 3>-3",                      // a space in a quoted name
           "CET25",                         // offset over 24 h
           "CET-1:60",                      // minutes over 59
           "CET-1:5",                       // one-digit minutes
           "CET-1x",                        // dst name under 3 letters
           "CET-1CEST",                     // DST without a rule
           "CET-1CEST,M3.5.0",              // no end
           "CET-1CEST,M3.5.0,",             // empty end
           "CET-1CEST,M13.5.0,M10.5.0",     // month 13
           "CET-1CEST,M0.5.0,M10.5.0",      // month 0
           "CET-1CEST,M3.6.0,M10.5.0",      // week 6
           "CET-1CEST,M3.0.0,M10.5.0",      // week 0
           "CET-1CEST,M3.5.7,M10.5.0",      // weekday 7
           "CET-1CEST,M3.5,M10.5.0",        // no weekday
           "CET-1CEST,J0,J100",             // J0
           "CET-1CEST,J366,J100",           // J366
           "CET-1CEST,366,100",             // day 366
           "CET-1CEST,M3.5.0/168,M10.5.0",  // time over 167 h
           "CET-1CEST,M3.5.0/,M10.5.0",     // empty time
           "CET-1CEST,M3.5.0,M10.5.0/3,",   // trailing comma
           "CET-1CEST,M3.5.0,M10.5.0 ",     // trailing space
           ":Europe/Berlin",                // an implementation-defined file name
           " CET-1",                        // leading space
       }) {
    auto z = TimeZone::FromTzif("x", SlimTzif(footer));
    ASSERT_FALSE(z.ok()) << footer;
    EXPECT_EQ(z.status().error_class(), ErrorClass::kConfig) << footer;
    EXPECT_NE(z.status().ToString().find("bad TZif file (footer)"), std::string::npos)
        << footer << ": " << z.status().ToString();
    EXPECT_FALSE(PosixTz::Parse(footer).has_value()) << footer;
  }
  // The footer's framing: missing, without its newlines.
  for (const std::string& tail :
       {std::string(), std::string("CET-1\n"), std::string("\nCET-1"), std::string("\n")}) {
    auto z = TimeZone::FromTzif("x", SlimTzif("", 0, &tail));
    ASSERT_FALSE(z.ok()) << tail;
    EXPECT_EQ(z.status().error_class(), ErrorClass::kConfig) << tail;
    EXPECT_NE(z.status().ToString().find("bad TZif file (footer)"), std::string::npos)
        << z.status().ToString();
  }
  // Bytes after the footer are ignored.
  const std::string extra = "\nCET-1\ntrailing";
  EXPECT_TRUE(TimeZone::FromTzif("x", SlimTzif("", 0, &extra)).ok());
  // A v1 file has no footer: whatever follows its data is not read.
  std::string v1 = SlimTzif("");
  v1 = v1.substr(0, v1.size() / 2 - 1);  // the first block (the "\n\n" footer is 2 bytes)
  v1[4] = '\0';
  auto z1 = TimeZone::FromTzif("v1", v1 + "garbage");
  ASSERT_TRUE(z1.ok()) << z1.status().ToString();
  EXPECT_EQ(z1->OffsetAt(At(2050, 7, 1)), 0);
}

// Transitions are read in order, each with its type; a type index past
// the types, or a transition not after the one before, is refused.
TEST(CodecTimeZone, TransitionsAndTheirTypeIndexes) {
  const std::int64_t t1 = At(2030, 3, 1);
  const std::int64_t t2 = At(2030, 10, 1);
  auto z = TimeZone::FromTzif("two", SlimTzif("", 0, nullptr, {{t1, 1}, {t2, 0}}));
  ASSERT_TRUE(z.ok()) << z.status().ToString();
  ExpectChange(*z, t1, 0, 1);
  ExpectChange(*z, t2, 1, 0);

  auto past = TimeZone::FromTzif("x", SlimTzif("", 0, nullptr, {{t1, 1}, {t2, 2}}));
  ASSERT_FALSE(past.ok());
  EXPECT_NE(past.status().ToString().find("bad TZif file (type index)"), std::string::npos)
      << past.status().ToString();
  auto unordered = TimeZone::FromTzif("x", SlimTzif("", 0, nullptr, {{t2, 1}, {t1, 0}}));
  ASSERT_FALSE(unordered.ok());
  EXPECT_NE(unordered.status().ToString().find("bad TZif file (unordered)"), std::string::npos)
      << unordered.status().ToString();
}

}  // namespace
}  // namespace msgx::sis
