// DeliveryPosition (stream/dispatch/delivery_position.h): the order of
// outbox events that survives a PostgreSQL restore, and the progress
// record's text.
#include "stream/dispatch/delivery_position.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

DeliveryPosition Of(std::int64_t version, const std::string& key) {
  auto p = PositionOfEvent(version, key);
  EXPECT_TRUE(p.ok()) << p.status().ToString();
  return p.ok() ? *p : DeliveryPosition{};
}

TEST(DeliveryPositionTest, OrdersByOffsetThenSubThenPositionNumerically) {
  EXPECT_LT(Of(9, "9:0:0"), Of(10, "10:0:0"));  // numerically, not as text
  EXPECT_LT(Of(10, "10:0:2"), Of(10, "10:0:10"));
  EXPECT_LT(Of(10, "10:0:7"), Of(10, "10:1:0"));  // the next message of a REPLAY command
  EXPECT_EQ(Of(10, "10:1:3"), (DeliveryPosition{10, 1, 3}));
  // The offset is the state_version column, the rest the key's last fields.
  EXPECT_EQ(Of(5, "KAFKA:msg:5:0"), (DeliveryPosition{5, 5, 0}));
}

TEST(DeliveryPositionTest, AKeyWithoutSubAndPositionIsABug) {
  for (const char* key : {"", "7", "7:0", "7:0:x", "7:-1:0", "7:0:3 ", "7::3"}) {
    auto p = PositionOfEvent(7, key);
    ASSERT_FALSE(p.ok()) << key;
    EXPECT_EQ(p.status().error_class(), ErrorClass::kInternal) << key;
    EXPECT_NE(p.status().message().find("does not end in :<sub>:<position>"), std::string::npos);
  }
  EXPECT_TRUE(PositionOfEvent(7, "x:0:3").ok());
}

TEST(DeliveryPositionTest, TheProgressRecordRoundTrips) {
  const DeliveryPosition p{123456789012, 2, 41};
  EXPECT_EQ(EncodeProgress(p), "123456789012:2:41");
  auto back = DecodeProgress(EncodeProgress(p));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, p);
}

TEST(DeliveryPositionTest, AForeignProgressValueIsAProtocolError) {
  for (const char* value : {"", "12", "12:0", "a:0:1", "1:2:3:4", "{\"v\":1}"}) {
    auto p = DecodeProgress(value);
    ASSERT_FALSE(p.ok()) << value;
    EXPECT_EQ(p.status().error_class(), ErrorClass::kProtocol) << value;
  }
}

}  // namespace
}  // namespace msgx
