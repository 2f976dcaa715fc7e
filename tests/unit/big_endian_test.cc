// base/big_endian.h: the bytes, their order, and reading them back. The
// RocksDB keys of the log and the state store are built with it, so a
// change of byte order would reorder every stored key.
#include "base/big_endian.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace msgx {
namespace {

TEST(BigEndianTest, BytesAreMostSignificantFirst) {
  EXPECT_EQ(BigEndian64(0x0102030405060708ULL), std::string("\x01\x02\x03\x04\x05\x06\x07\x08", 8));
  std::string out = "k";
  AppendBigEndian32(&out, 0xA1B2C3D4U);
  AppendBigEndian64(&out, 1);
  EXPECT_EQ(out, std::string("k\xA1\xB2\xC3\xD4\0\0\0\0\0\0\0\x01", 13));
  StoreBigEndian32(&out, 1, 0x01020304U);
  EXPECT_EQ(out, std::string("k\x01\x02\x03\x04\0\0\0\0\0\0\0\x01", 13));
}

TEST(BigEndianTest, ByteOrderIsNumberOrder) {
  const std::uint64_t values[] = {0,
                                  1,
                                  255,
                                  256,
                                  65'535,
                                  1ULL << 32,
                                  (1ULL << 56) - 1,
                                  1ULL << 56,
                                  std::numeric_limits<std::uint64_t>::max()};
  for (std::size_t i = 1; i < std::size(values); ++i) {
    EXPECT_LT(BigEndian64(values[i - 1]), BigEndian64(values[i])) << values[i];
  }
}

TEST(BigEndianTest, ReadsBackWhatItWrote) {
  const std::uint64_t round_trip[] = {0ULL, 1ULL, 0x8000000000000000ULL, 0xFEDCBA9876543210ULL,
                                      std::numeric_limits<std::uint64_t>::max()};
  for (std::uint64_t v : round_trip) {
    EXPECT_EQ(ReadBigEndian64(BigEndian64(v)), v);
  }
  // Only the first 8 bytes count; fewer spell a smaller number.
  EXPECT_EQ(ReadBigEndian64(BigEndian64(7) + "tail"), 7u);
  EXPECT_EQ(ReadBigEndian64(std::string("\x01\x02", 2)), 0x0102u);
  EXPECT_EQ(ReadBigEndian64(""), 0u);
  EXPECT_EQ(ReadBigEndian32(std::string("\xA1\xB2\xC3\xD4\xFF", 5)), 0xA1B2C3D4U);
  EXPECT_EQ(ReadBigEndian32(std::string("\x01\x02", 2)), 0x0102u);
}

}  // namespace
}  // namespace msgx
