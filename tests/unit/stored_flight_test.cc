// How flights are stored (state/compact_flight.h, state/state_codec.h,
// docs/fold.md#stored-flights): the compact form round-trips every kind of
// value canonically, rejects any malformed buffer without crashing, and is
// smaller than the flatbuffer form; the flatbuffer form that older stores
// hold still decodes, and a store holding it compares equal to one
// rewritten in the compact form (tools/state_diff.h, `msgx refold
// --verify`).
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <memory>
#include <string>
#include <vector>

#include "state/compact_flight.h"
#include "state/state_codec.h"
#include "state/state_store.h"
#include "tests/support/raw_state_store.h"
#include "tests/unit/fold_fakes.h"
#include "tools/state_diff.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

Flight SampleFlight() {
  Flight f;
  f.flid = "100042";
  f.version = 1'234'567;
  f.data.fields.emplace("ACFT", Value::Text("B738"));
  f.data.fields.emplace("ALCD", Value::Text("CA"));
  f.data.fields.emplace("EMPT", Value::Text(""));
  f.data.fields.emplace("NOTE", Value::Text("quote \" back \\ 中文 \n"));
  f.data.fields.emplace("NULL", Value::Null());
  f.data.fields.emplace("PAXN", Value::Int(-300));
  f.data.fields.emplace("RECS", Value::Int(1LL << 40));
  f.data.fields.emplace("SODT", Value::Time(1'611'334'800'000'000LL));
  f.data.fields.emplace("STND", Value::Text("S12"));
  Entries gates;
  Fields g1;
  g1.emplace("CODE", Value::Text("G1"));
  g1.emplace("ESTM", Value::Time(-5));
  gates.push_back(g1);
  gates.push_back(Fields{});  // an entry of no fields
  f.data.lists.emplace("GATE", gates);
  f.data.lists.emplace("NONE", Entries{});
  return f;
}

TEST(CompactFlightTest, RoundTripsEveryKindOfValueAndListCanonically) {
  const Flight f = SampleFlight();
  const std::string bytes = EncodeFlight(f);
  ASSERT_TRUE(IsCompactFlight(bytes));
  auto back = DecodeFlight(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, f);
  EXPECT_EQ(EncodeFlight(*back), bytes);
  EXPECT_EQ(StoredFlightSodt(bytes).value(),
            std::optional<MicrosSinceEpoch>(1'611'334'800'000'000LL));

  Flight no_sodt = f;
  no_sodt.data.fields.erase("SODT");
  EXPECT_EQ(StoredFlightSodt(EncodeFlight(no_sodt)).value(), std::nullopt);
  Flight text_sodt = f;
  text_sodt.data.fields.at("SODT") = Value::Text("2021-01-23");
  EXPECT_EQ(StoredFlightSodt(EncodeFlight(text_sodt)).value(), std::nullopt);
  EXPECT_EQ(DecodeFlight(EncodeFlight(Flight{})).value(), Flight{});
}

TEST(CompactFlightTest, IsLessThanHalfTheFlatbufferForm) {
  Flight f = SampleFlight();
  for (int i = 0; i < 40; ++i) {
    f.data.fields.emplace("F" + std::to_string(100 + i), Value::Text("V" + std::to_string(i)));
  }
  EXPECT_LT(EncodeFlight(f).size() * 2, EncodeFlatbufferFlight(f).size());
}

TEST(CompactFlightTest, AnyMalformedBufferIsInternalNotACrash) {
  const std::string bytes = EncodeFlight(SampleFlight());
  // Every truncation, and a byte too many.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    const std::string cut = bytes.substr(0, n);
    auto f = DecodeFlight(cut);
    ASSERT_FALSE(f.ok()) << n;
    EXPECT_EQ(f.status().error_class(), ErrorClass::kInternal) << n;
    (void)StoredFlightSodt(cut);  // fails or finds SODT; never reads past the end
  }
  EXPECT_FALSE(DecodeFlight(bytes + "x").ok());
  // Every single byte changed: decodes to something else or fails, never
  // to the same flight (and never crashes).
  for (std::size_t i = 4; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x5A);
    auto f = DecodeFlight(bad);
    if (f.ok()) {
      EXPECT_NE(*f, SampleFlight()) << i;
    }
  }
  // An unknown kind, and names out of order.
  Flight one;
  one.data.fields.emplace("A", Value::Null());
  std::string kind = EncodeFlight(one);
  const std::size_t at = kind.find(
      "\x01"
      "A");
  ASSERT_NE(at, std::string::npos);
  ASSERT_EQ(kind[at + 2], '\0');  // the kind byte of A: null
  kind[at + 2] = '\x04';
  EXPECT_FALSE(DecodeFlight(kind).ok());
  Flight two;
  two.data.fields.emplace("A", Value::Null());
  two.data.fields.emplace("B", Value::Null());
  std::string swapped = EncodeFlight(two);
  const std::size_t a = swapped.find(
      "\x01"
      "A");
  const std::size_t b = swapped.find(
      "\x01"
      "B");
  ASSERT_NE(a, std::string::npos);
  ASSERT_NE(b, std::string::npos);
  std::swap(swapped[a + 1], swapped[b + 1]);
  EXPECT_FALSE(DecodeFlight(swapped).ok());
}

TEST(StoredFlightTest, TheFlatbufferFormOfOlderStoresStillDecodes) {
  const Flight f = SampleFlight();
  const std::string old = EncodeFlatbufferFlight(f);
  ASSERT_FALSE(IsCompactFlight(old));
  EXPECT_EQ(DecodeFlight(old).value(), f);
  EXPECT_EQ(StoredFlightSodt(old).value(), StoredFlightSodt(EncodeFlight(f)).value());
  EXPECT_TRUE(SameStoredFlight(old, EncodeFlight(f)));
  Flight other = f;
  other.data.fields.at("STND") = Value::Text("S13");
  EXPECT_FALSE(SameStoredFlight(old, EncodeFlight(other)));
  EXPECT_FALSE(SameStoredFlight(EncodeFlight(f), EncodeFlight(other)));
}

// Rewrites every flight of the store at `path` (closed) in the flatbuffer
// form, as a store written before the compact form holds them.
void RewriteFlightsInTheOlderForm(const std::string& path) {
  RawStateStore store(path);
  ASSERT_TRUE(store.ok());
  rocksdb::ColumnFamilyHandle* flights = store.cf("flights");
  std::vector<std::pair<std::string, std::string>> rewritten;
  std::unique_ptr<rocksdb::Iterator> it(store.db()->NewIterator(rocksdb::ReadOptions(), flights));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto f = DecodeFlight({it->value().data(), it->value().size()});
    ASSERT_TRUE(f.ok());
    rewritten.emplace_back(it->key().ToString(), EncodeFlatbufferFlight(*f));
  }
  it.reset();
  ASSERT_FALSE(rewritten.empty());
  for (const auto& [k, v] : rewritten) {
    ASSERT_TRUE(store.db()->Put(rocksdb::WriteOptions(), flights, k, v).ok());
  }
}

void CommitFlight(StateStore& store, const Flight& f) {
  BatchWrite w;
  w.flights[f.flid] = std::make_shared<const Flight>(f);
  w.meta.applied_offset = 0;
  ASSERT_TRUE(store.Commit(w).ok());
}

TEST(StoredFlightTest, AStoreHoldingTheOlderFormDiffersFromANewOneOnlyWhereFlightsDo) {
  TempDir dir;
  StateStore::Options options;
  options.sync = false;
  const std::string older = dir.path() + "/older";
  const std::string newer = dir.path() + "/newer";
  const Flight f = SampleFlight();
  for (const std::string& path : {older, newer}) {
    auto store = StateStore::Open(path, options);
    ASSERT_TRUE(store.ok());
    CommitFlight(**store, f);
  }
  ASSERT_NO_FATAL_FAILURE(RewriteFlightsInTheOlderForm(older));
  auto a = StateStore::Open(older, options);
  auto b = StateStore::Open(newer, options);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)->GetFlight(f.flid).value(), f);
  std::vector<std::string> differing;
  auto collect = [&](std::string_view cf, std::string_view key, auto, auto) {
    differing.push_back(std::string(cf) + "/" + std::string(key));
    return true;
  };
  ASSERT_TRUE(app::DiffEntries(**a, **b, collect).ok());
  EXPECT_TRUE(differing.empty()) << differing.front();

  // The older store's flight changes in the compact form: a real difference.
  Flight changed = f;
  changed.data.fields.at("STND") = Value::Text("S13");
  CommitFlight(**a, changed);
  ASSERT_TRUE(app::DiffEntries(**a, **b, collect).ok());
  EXPECT_EQ(differing, std::vector<std::string>{"flights/" + f.flid});
}

}  // namespace
}  // namespace msgx
