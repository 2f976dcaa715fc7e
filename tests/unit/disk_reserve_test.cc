// The free-space reserve of state.dir (state/disk_reserve.h): below it the
// log and the state store refuse a write as an outage and write nothing;
// with room again the same write succeeds.
#include "state/disk_reserve.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <string>

#include "base/clock.h"
#include "state/log_record.h"
#include "state/log_store.h"
#include "state/state_store.h"

namespace msgx {
namespace {

namespace fs = std::filesystem;

constexpr std::uintmax_t kMore = std::numeric_limits<std::uintmax_t>::max();

class DiskReserveTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("msgx-reserve-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(DiskReserveTest, SaysWhatIsFreeAndWhatIsKept) {
  EXPECT_TRUE(DiskReserve(dir_.string(), 0).Check().ok());
  const Status s = DiskReserve(dir_.string(), kMore).Check();
  EXPECT_EQ(s.error_class(), ErrorClass::kInfra);
  EXPECT_NE(s.message().find("MiB free, less than the"), std::string::npos) << s.ToString();
  EXPECT_NE(s.message().find("msgx keeps free (state.min-free-mb)"), std::string::npos);
}

TEST_F(DiskReserveTest, TheLogAppendsNothingBelowTheReserve) {
  ManualClock clock{1'700'000'000'000'000};
  auto log = LogStore::Open((dir_ / "log").string(), &clock);
  ASSERT_TRUE(log.ok()) << log.status().ToString();
  const DiskReserve full(dir_.string(), kMore), room(dir_.string(), 0);
  const LogRecordData rec[] = {LogRecordData::Message(1, "<MSG/>", 1000)};
  CaptureProgress progress;
  progress.watermark = 1;
  (*log)->set_reserve(&full);
  auto refused = (*log)->Append(rec, progress);
  EXPECT_EQ(refused.status().error_class(), ErrorClass::kInfra);
  EXPECT_EQ((*log)->next_offset(), 0u);
  EXPECT_FALSE((*log)->capture_progress().has_value());
  (*log)->set_reserve(&room);
  auto appended = (*log)->Append(rec, progress);
  ASSERT_TRUE(appended.ok()) << appended.status().ToString();
  EXPECT_EQ((*log)->next_offset(), 1u);
}

TEST_F(DiskReserveTest, TheStateStoreCommitsNothingBelowTheReserve) {
  const std::string path = (dir_ / "state").string();
  BatchWrite batch;
  Outcome outcome;
  outcome.mailbox_id = 7;
  batch.outcomes[7] = outcome;
  batch.meta.applied_offset = 0;
  {
    const DiskReserve full(dir_.string(), kMore);
    StateStore::Options options;
    options.reserve = &full;
    auto store = StateStore::Open(path, options);
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    EXPECT_EQ((*store)->Commit(batch).error_class(), ErrorClass::kInfra);
    auto kept = (*store)->GetOutcome(7);
    ASSERT_TRUE(kept.ok());
    EXPECT_FALSE(kept->has_value());
    EXPECT_EQ((*store)->ReadMeta()->applied_offset, -1);
  }
  auto store = StateStore::Open(path, {});
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  ASSERT_TRUE((*store)->Commit(batch).ok());
  auto kept = (*store)->GetOutcome(7);
  ASSERT_TRUE(kept.ok());
  EXPECT_TRUE(kept->has_value());
}

}  // namespace
}  // namespace msgx
