// The pending batch's encoding (state/pending_batch.h, schemas/pending.fbs):
// a flight row whose JSON is inside its last event's payload points there
// instead of holding a copy, decodes to the same row, and a pointer outside
// its event is a corrupt record (docs/fold.md#pending-batches).
#include "state/pending_batch.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "schemas/pending_generated.h"

namespace msgx {
namespace {

std::size_t Occurrences(std::string_view haystack, std::string_view needle) {
  std::size_t n = 0;
  for (std::size_t at = haystack.find(needle); at != std::string_view::npos;
       at = haystack.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

EventRow Event(const std::string& key, const std::string& flid, const std::string& payload) {
  EventRow e;
  e.event_key = key;
  e.target = std::string(kTargetMsg);
  e.partition_key = flid;
  e.event_type = "UPSERT";
  e.payload_json = payload;
  return e;
}

TEST(PendingBatchTest, AFlightRowPointsIntoItsLastEventInsteadOfHoldingACopy) {
  const std::string first = R"({"FLID":"7","STND":"S1","version":1})";
  const std::string last = R"({"FLID":"7","STND":"S2","version":2})";
  const std::string alone = R"({"FLID":"8","STND":"ONLY-IN-THE-ROW","version":3})";
  PendingBatch p;
  p.first_offset = 1;
  p.last_offset = 3;
  p.events.push_back(Event("1:0:0", "7", R"({"flight":)" + first + "}"));
  p.events.push_back(Event("2:0:0", "7", R"({"flight":)" + last + R"(,"op":"UPSERT"})"));
  p.flights.push_back({"7", last});
  p.flights.push_back({"8", alone});  // no event carries it
  p.flights.push_back({"9", std::nullopt});

  const std::string bytes = EncodePendingBatch(p);
  EXPECT_EQ(Occurrences(bytes, last), 1u);  // in the event only
  EXPECT_EQ(Occurrences(bytes, alone), 1u);
  auto back = DecodePendingBatch(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);
  PendingBatchEncoder encoder;
  EXPECT_EQ(encoder.Encode(p), bytes);
}

TEST(PendingBatchTest, AFlightRowPointingOutsideItsEventIsCorrupt) {
  auto encode = [](int event, std::uint32_t at, std::uint32_t size) {
    flatbuffers::FlatBufferBuilder b;
    namespace fp = ::msgx::fbpending;
    auto e = fp::CreateEventRow(b, b.CreateString("1:0:0"), b.CreateString("KAFKA:msg"),
                                b.CreateString("7"), b.CreateString("UPSERT"), 1,
                                b.CreateString("0123456789"));
    auto events = b.CreateVector(std::vector{e});
    auto f = fp::CreateFlightRow(b, b.CreateString("7"), false, 0, event, at, size);
    auto flights = b.CreateVector(std::vector{f});
    b.Finish(fp::CreateBatch(b, 1, 1, 3, 0, 0, 0, 0, events, 0, 0, flights));
    return std::string(reinterpret_cast<const char*>(b.GetBufferPointer()), b.GetSize());
  };
  EXPECT_EQ(DecodePendingBatch(encode(0, 2, 8)).value().flights.at(0).json, "23456789");
  for (auto [event, at, size] : {std::tuple{1, 0u, 1u}, {0, 11u, 0u}, {0, 2u, 9u}, {0, 10u, 1u}}) {
    auto p = DecodePendingBatch(encode(event, at, size));
    ASSERT_FALSE(p.ok()) << event << " " << at << " " << size;
    EXPECT_EQ(p.status().error_class(), ErrorClass::kInternal);
  }
}

// RocksDB hands a stored batch back at any address; each reader takes it
// from an aligned copy when it must (base/aligned_bytes.h), and refuses
// bytes that do not verify.
TEST(PendingBatchTest, EachReaderTakesOddAddressesAndRefusesGarbage) {
  PendingBatch p;
  p.first_offset = 5;
  p.last_offset = 9;
  p.last_append_micros = 77;
  p.events.push_back(Event("5:0:0", "7", R"({"flight":{"FLID":"7"}})"));
  const std::string bytes = EncodePendingBatch(p);
  std::string odd_buffer = "x" + bytes;
  const std::string_view odd = std::string_view(odd_buffer).substr(1);

  auto back = DecodePendingBatch(odd);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);
  EXPECT_EQ(PendingBatchRange(odd).value(), std::make_pair(std::int64_t{5}, std::int64_t{9}));
  EXPECT_EQ(PendingBatchLastAppend(odd).value(), 77);

  const std::string garbage = "not a pending batch at all";
  EXPECT_EQ(DecodePendingBatch(garbage).status().error_class(), ErrorClass::kInternal);
  EXPECT_EQ(PendingBatchRange(garbage).status().error_class(), ErrorClass::kInternal);
  EXPECT_EQ(PendingBatchLastAppend(garbage).status().error_class(), ErrorClass::kInternal);
}

}  // namespace
}  // namespace msgx
