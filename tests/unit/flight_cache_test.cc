// The fold's cache of committed flights (stream/fold/flight_cache.h,
// docs/fold.md#the-flight-cache): its bound, and that it is invisible to the
// fold's decisions, across batches and across a failed commit.
#include "stream/fold/flight_cache.h"

#include <gtest/gtest.h>

#include <limits>

#include "base/log.h"
#include "state/disk_reserve.h"
#include "stream/fold/fold.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

std::shared_ptr<const Flight> Made(const std::string& flid) {
  auto f = std::make_shared<Flight>();
  f->flid = flid;
  return f;
}

TEST(FlightCacheTest, HoldsFlightsAndAbsences) {
  FlightCache cache(4);
  EXPECT_FALSE(cache.Find("F1").has_value());
  const auto f1 = Made("F1");
  cache.Put("F1", f1);
  cache.Put("F2", nullptr);
  ASSERT_TRUE(cache.Find("F1").has_value());
  EXPECT_EQ(*cache.Find("F1"), f1);
  ASSERT_TRUE(cache.Find("F2").has_value());
  EXPECT_EQ(*cache.Find("F2"), nullptr);
  cache.Put("F1", nullptr);  // deleted
  EXPECT_EQ(*cache.Find("F1"), nullptr);
  cache.Clear();
  EXPECT_FALSE(cache.Find("F2").has_value());
  EXPECT_EQ(cache.size(), 0u);
}

TEST(FlightCacheTest, HoldsAtMostTwoGenerationsAndKeepsWhatIsUsed) {
  FlightCache cache(3);
  for (int i = 0; i < 20; ++i) {
    cache.Put("F" + std::to_string(i), Made("F" + std::to_string(i)));
    EXPECT_LE(cache.size(), 6u);
    // F0 is used after every put, so it is never dropped.
    ASSERT_TRUE(cache.Find("F0").has_value()) << i;
  }
  EXPECT_FALSE(cache.Find("F1").has_value());  // unused since, so dropped
  EXPECT_TRUE(cache.Find("F19").has_value());  // the latest
}

const FixedZone kZone(8 * 3600);
const MicrosSinceEpoch kT0 = Local(2026, 11, 30, 6);

// A log that creates F1 and changes its stand back and forth, some changes
// repeating the stand the flight already has.
VectorLog StandLog() {
  VectorLog log;
  log.AddMessage(
      1, kT0,
      Raw("AODB", "1", "SCHD", "ADD", "F1," + std::to_string(Local(2026, 11, 30, 12)) + ",A320"));
  const char* stands[] = {"S1", "S1", "S2", "S1", "S1"};
  for (int i = 0; i < 5; ++i) {
    log.AddMessage(
        2 + i, kT0,
        Raw("AODB", std::to_string(2 + i), "FLOP", "STND", std::string("F1=") + stands[i]));
  }
  return log;
}

class FlightCacheFoldTest : public ::testing::Test {
 protected:
  void SetUp() override { (void)InitLogging("off"); }

  // The digest and F1's stand after folding `log` into a new store, with
  // `batch_max` records per batch.
  std::pair<std::string, Value> FoldInto(const std::string& name, const VectorLog& log,
                                         int batch_max) {
    auto store = StateStore::Open(dir_.path() + "/" + name, {false, false});
    EXPECT_TRUE(store.ok());
    FoldOptions options;
    options.zone = &kZone;
    options.batch_max = batch_max;
    Fold fold(store->get(), &decoder_, &log, options);
    EXPECT_TRUE(fold.Open().ok());
    EXPECT_TRUE(fold.Process(log.records).ok());
    auto f = (*store)->GetFlight("F1");
    EXPECT_TRUE(f.ok() && f->has_value());
    return {fold.digest(), f.ok() && f->has_value() ? (*f)->data.Get("STND") : Value()};
  }

  TempDir dir_;
  FakeDecoder decoder_;
};

// Each batch reads F1 as the batch before committed it: folded a record at a
// time, the fold decides exactly what it decides in one batch.
TEST_F(FlightCacheFoldTest, EachBatchSeesWhatTheBatchBeforeCommitted) {
  const VectorLog log = StandLog();
  const auto one_batch = FoldInto("one", log, 100);
  const auto per_record = FoldInto("per-record", log, 1);
  EXPECT_EQ(per_record.first, one_batch.first);
  EXPECT_EQ(per_record.second, Value::Text("S1"));
  EXPECT_EQ(one_batch.second, Value::Text("S1"));
}

// A batch whose commit fails leaves nothing of itself in the cache: folded
// again, its records decide as if the failed attempt never happened.
TEST_F(FlightCacheFoldTest, AFailedCommitLeavesOnlyCommittedFlightsCached) {
  const VectorLog log = StandLog();
  const auto reference = FoldInto("reference", log, 100);

  DiskReserve reserve(dir_.path(), 0);
  StateStore::Options store_options{false, false};
  store_options.reserve = &reserve;
  auto store = StateStore::Open(dir_.path() + "/failing", store_options);
  ASSERT_TRUE(store.ok());
  FoldOptions options;
  options.zone = &kZone;
  options.batch_max = 100;
  Fold fold(store->get(), &decoder_, &log, options);
  ASSERT_TRUE(fold.Open().ok());
  const std::vector<FoldInput> first(log.records.begin(), log.records.begin() + 1);
  const std::vector<FoldInput> second(log.records.begin() + 1, log.records.begin() + 2);
  ASSERT_TRUE(fold.Process(first).ok());  // F1 created and cached
  reserve = DiskReserve(dir_.path(), std::numeric_limits<std::uintmax_t>::max());
  EXPECT_EQ(fold.Process(second).error_class(), ErrorClass::kInfra);  // F1=S1, not committed
  reserve = DiskReserve(dir_.path(), 0);
  ASSERT_TRUE(fold.Process(log.records).ok());
  EXPECT_EQ(fold.digest(), reference.first);
  auto f = (*store)->GetFlight("F1");
  ASSERT_TRUE(f.ok() && f->has_value());
  EXPECT_EQ((*f)->data.Get("STND"), reference.second);
}

}  // namespace
}  // namespace msgx
