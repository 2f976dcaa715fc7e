// The canonical JSON pieces every digest and payload is made of
// (state/flight.h, state/airport_zone.h): times in airport time and escaped
// strings, byte for byte.
#include <gtest/gtest.h>

#include <string>

#include "state/airport_zone.h"
#include "state/flight.h"

namespace msgx {
namespace {

constexpr MicrosSinceEpoch kSecond = 1'000'000;

TEST(CanonicalJson, TimesInAirportTime) {
  const FixedZone shanghai(8 * 3600);
  const FixedZone minus(-(3 * 3600 + 30 * 60));  // Newfoundland standard time
  // 2021-01-22T19:10:00Z.
  const MicrosSinceEpoch t = 1611342600 * kSecond;
  EXPECT_EQ(FormatAirportIso8601(t, shanghai), "2021-01-23T03:10:00+08:00");
  EXPECT_EQ(FormatAirportIso8601(t + 7, shanghai), "2021-01-23T03:10:00.000007+08:00");
  EXPECT_EQ(FormatAirportIso8601(t + 999'999, minus), "2021-01-22T15:40:00.999999-03:30");
  EXPECT_EQ(FormatAirportIso8601(0, FixedZone(0)), "1970-01-01T00:00:00+00:00");
  EXPECT_EQ(FormatAirportIso8601(-1, FixedZone(0)), "1969-12-31T23:59:59.999999+00:00");
  EXPECT_EQ(FormatAirportIso8601(253402300799 * kSecond, FixedZone(0)),
            "9999-12-31T23:59:59+00:00");
  // Outside four-digit years.
  EXPECT_EQ(FormatAirportIso8601(253402300800 * kSecond, FixedZone(0)),
            "10000-01-01T00:00:00+00:00");
}

TEST(CanonicalJson, StringsEscapeOnlyQuotesBackslashesAndControls) {
  std::string out;
  AppendJsonString("", &out);
  EXPECT_EQ(out, "\"\"");
  out.clear();
  AppendJsonString("plain", &out);
  EXPECT_EQ(out, "\"plain\"");
  out.clear();
  AppendJsonString(std::string("a\"b\\c\n\x01\x1f d/\xe6\x9c\xba", 14), &out);
  EXPECT_EQ(out, "\"a\\\"b\\\\c\\u000a\\u0001\\u001f d/\xe6\x9c\xba\"");
  out.clear();
  AppendJsonString("\"", &out);
  EXPECT_EQ(out, "\"\\\"\"");
}

// The escape, one byte at a time, as RFC 8259 and the header state it.
std::string EscapeByteByByte(std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (const char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u == '"' || u == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20) {
      out.append("\\u00");
      out.push_back(kHex[u >> 4]);
      out.push_back(kHex[u & 0xf]);
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
  return out;
}

// AppendJsonString checks eight bytes at a time: every byte value, at every
// position of strings around and across the word boundaries, escapes as
// byte by byte.
TEST(CanonicalJson, EveryByteEscapesTheSameAtEveryPosition) {
  for (std::size_t len = 1; len <= 19; ++len) {
    for (std::size_t at = 0; at < len; ++at) {
      for (int b = 0; b < 256; ++b) {
        std::string s(len, 'x');
        s[at] = static_cast<char>(b);
        if (at + 1 < len) s[len - 1] = static_cast<char>(0xe6);  // a UTF-8 lead byte
        std::string out;
        AppendJsonString(s, &out);
        ASSERT_EQ(out, EscapeByteByByte(s)) << "length " << len << ", byte " << b << " at " << at;
      }
    }
  }
}

}  // namespace
}  // namespace msgx
