// RebuildGate (stream/service/rebuild_gate.h): when the fold may fold
// before PostgreSQL's batch ends are known, which ends it cuts at, and the
// marker that makes an interrupted rebuild wait again.
#include "stream/service/rebuild_gate.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

PgBatchEnd End(std::int64_t first, std::int64_t last) { return {first, last, 2, "00"}; }

class RebuildGateTest : public ::testing::Test {
 protected:
  RebuildGate Gate(RebuildGate::Loader load) { return RebuildGate({std::move(load), marker_}); }
  static Result<RebuildCheck> Unreachable() { return Status::Infra("connection refused"); }

  testing::TempDir dir_;
  std::string marker_ = dir_.path() + "/rebuild-until";
};

TEST_F(RebuildGateTest, WithoutPostgresTheFoldNeverWaits) {
  RebuildGate gate({});
  std::vector<std::int64_t> cuts;
  EXPECT_TRUE(gate.BeforeStep(-1, &cuts).ok());
  EXPECT_TRUE(cuts.empty());
}

TEST_F(RebuildGateTest, AStoreThatFoldedBeforeFoldsWhilePostgresIsUnreachable) {
  RebuildGate gate = Gate(Unreachable);
  std::vector<std::int64_t> cuts;
  EXPECT_TRUE(gate.BeforeStep(41, &cuts).ok());
  EXPECT_FALSE(gate.loaded());
  EXPECT_TRUE(cuts.empty());
}

TEST_F(RebuildGateTest, AnEmptyStoreWaitsForPostgresBecauseItMayBeARebuild) {
  int calls = 0;
  bool up = false;
  RebuildGate gate = Gate([&]() -> Result<RebuildCheck> {
    ++calls;
    if (!up) return Status::Infra("connection refused");
    return RebuildCheck({End(0, 9), End(10, 19)});
  });
  std::vector<std::int64_t> cuts;
  Status s = gate.BeforeStep(-1, &cuts);
  EXPECT_EQ(s.error_class(), ErrorClass::kInfra);
  EXPECT_NE(s.message().find("nothing folded yet"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("connection refused"), std::string::npos) << s.message();
  up = true;
  ASSERT_TRUE(gate.BeforeStep(-1, &cuts).ok());
  EXPECT_EQ(cuts, (std::vector<std::int64_t>{9, 19}));
  // Loaded once, never asked again.
  EXPECT_TRUE(gate.BeforeStep(-1, &cuts).ok());
  EXPECT_EQ(calls, 2);
}

TEST_F(RebuildGateTest, OnlyEndsAboveTheAppliedOffsetAreCut) {
  RebuildGate gate = Gate([] { return RebuildCheck({End(0, 9), End(10, 19), End(20, 29)}); });
  std::vector<std::int64_t> cuts;
  ASSERT_TRUE(gate.BeforeStep(14, &cuts).ok());
  EXPECT_EQ(cuts, (std::vector<std::int64_t>{19, 29}));
}

TEST_F(RebuildGateTest, AnInterruptedRebuildWaitsAgainUntilItsEnd) {
  {
    RebuildGate gate = Gate([] { return RebuildCheck({End(0, 9), End(10, 19)}); });
    std::vector<std::int64_t> cuts;
    ASSERT_TRUE(gate.BeforeStep(-1, &cuts).ok());
  }
  ASSERT_TRUE(std::filesystem::exists(marker_));
  // Restarted at offset 12 (past a first batch) with PostgreSQL down.
  RebuildGate gate = Gate(Unreachable);
  std::vector<std::int64_t> cuts;
  Status s = gate.BeforeStep(12, &cuts);
  EXPECT_EQ(s.error_class(), ErrorClass::kInfra);
  EXPECT_NE(s.message().find("a rebuild up to offset 19"), std::string::npos) << s.message();
  EXPECT_TRUE(gate.BeforeStep(19, &cuts).ok());
}

TEST_F(RebuildGateTest, ACheckWithNothingToCompareRemovesAStaleMarker) {
  std::ofstream(marker_) << "19\n";
  RebuildGate gate = Gate([] { return RebuildCheck({}); });
  std::vector<std::int64_t> cuts;
  ASSERT_TRUE(gate.BeforeStep(30, &cuts).ok());
  EXPECT_TRUE(cuts.empty());
  EXPECT_FALSE(std::filesystem::exists(marker_));
}

TEST_F(RebuildGateTest, ABugReadingPostgresIsNotAWait) {
  RebuildGate gate = Gate([]() -> Result<RebuildCheck> { return Status::Internal("bad row"); });
  std::vector<std::int64_t> cuts;
  EXPECT_EQ(gate.BeforeStep(5, &cuts).error_class(), ErrorClass::kInternal);
}

}  // namespace
}  // namespace msgx
