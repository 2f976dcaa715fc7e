// The bytes of PgBinaryArray (stream/pg/binary_array.h): array_send's
// format, checked byte for byte. The server's reading of the same arrays is
// tested against a real PostgreSQL in tests/integration/pg_prepared_test.cc.
#include <gtest/gtest.h>

#include <string>

#include "stream/pg/binary_array.h"

namespace msgx {
namespace {

std::string Bytes(std::initializer_list<int> b) {
  std::string out;
  for (int v : b) out += static_cast<char>(v);
  return out;
}

TEST(PgBinaryArrayTest, TextElementsAreLengthAndBytesAndNullIsMinusOne) {
  PgBinaryArray a(PgElementType::kText);
  a.AddText("a\"\\");
  a.AddNull();
  a.AddText("");
  EXPECT_EQ(a.size(), 3u);
  const std::string want = Bytes({0,   0,   0,    1,    // ndim
                                  0,   0,   0,    1,    // has a NULL
                                  0,   0,   0,    25,   // text
                                  0,   0,   0,    3,    // three elements
                                  0,   0,   0,    1,    // lower bound
                                  0,   0,   0,    3,    // "a\"\\": no escaping
                                  'a', '"', '\\',       //
                                  -1,  -1,  -1,   -1,   // NULL
                                  0,   0,   0,    0});  // ""
  EXPECT_EQ(a.Bytes(), want.size());
  EXPECT_EQ(a.Take(), want);
  // Take empties it: the next array starts over, without the NULL flag.
  a.AddText("x");
  EXPECT_EQ(a.Take(), Bytes({0, 0, 0, 1, 0,  0, 0, 0, 0, 0, 0, 25, 0, 0, 0, 1, 0, 0, 0, 1,  //
                             0, 0, 0, 1, 'x'}));
}

TEST(PgBinaryArrayTest, IntegersAreBigEndianTwosComplement) {
  PgBinaryArray i8(PgElementType::kInt8);
  i8.AddInt8(-2);
  i8.AddInt8(0x0102030405060708);
  EXPECT_EQ(i8.Take(),
            Bytes({0, 0, 0, 1, 0,  0,  0,  0,  0,  0,  0,  20, 0, 0, 0, 2, 0, 0, 0, 1,  //
                   0, 0, 0, 8, -1, -1, -1, -1, -1, -1, -1, -2,                          //
                   0, 0, 0, 8, 1,  2,  3,  4,  5,  6,  7,  8}));
  PgBinaryArray i4(PgElementType::kInt4);
  i4.AddInt4(258);
  EXPECT_EQ(i4.Take(), Bytes({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0, 0, 0, 1, 0, 0, 0, 1,  //
                              0, 0, 0, 4, 0, 0, 1, 2}));
}

TEST(PgBinaryArrayTest, ATimeCountsFromTheYear2000) {
  PgBinaryArray t(PgElementType::kTimestampTz);
  t.AddTimestampTz(946'684'800'000'000);      // 2000-01-01T00:00:00Z
  t.AddTimestampTz(946'684'800'000'000 - 1);  // one microsecond before
  // timestamptz is OID 1184 = 0x04a0.
  EXPECT_EQ(t.Take(),
            Bytes({0, 0, 0, 1, 0,  0,  0,  0,  0,  0,  4,  -96, 0, 0, 0, 2, 0, 0, 0, 1,  //
                   0, 0, 0, 8, 0,  0,  0,  0,  0,  0,  0,  0,                            //
                   0, 0, 0, 8, -1, -1, -1, -1, -1, -1, -1, -1}));
}

TEST(PgBinaryArrayTest, AnEmptyArrayHasNoDimension) {
  PgBinaryArray a(PgElementType::kInt8);
  EXPECT_EQ(a.Take(), Bytes({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 20}));
}

}  // namespace
}  // namespace msgx
