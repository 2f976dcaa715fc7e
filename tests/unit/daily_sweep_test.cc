// DailySweep (stream/jobs/daily_sweep.h): the day's SWEEP and EXPIRE are
// appended once, at the time of day in airport time, across a restart; what
// they carry depends on the day and the settings, not on the append time.
#include "stream/jobs/daily_sweep.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <variant>
#include <vector>

#include "base/clock.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

const FixedZone kShanghai(8 * 3600);
// 2026-12-01 00:00 airport time (+08:00) = 2026-11-30T16:00Z.
constexpr MicrosSinceEpoch kDec1 = 1'796'054'400'000'000;
constexpr MicrosSinceEpoch kMinute = 60'000'000;
constexpr MicrosSinceEpoch kHour = 60 * kMinute;
constexpr int k0330 = 3 * 60 + 30;

class DailySweepTest : public ::testing::Test {
 protected:
  void SetUp() override { Open(); }
  void Open() {
    log_.reset();
    auto l = LogStore::Open(dir_.path() + "/log", &clock_);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    log_ = std::move(l).value();
  }
  DailySweepStep Step() {
    DailySweep job(log_.get(), &kShanghai, &clock_, k0330, settings_);
    auto r = job.Step();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : DailySweepStep{};
  }
  // The kinds of the log's commands, in order: 'S' sweep, 'E' expiry.
  std::string Commands() {
    std::vector<LogEntry> all;
    EXPECT_TRUE(log_->Read(0, 100, &all).ok());
    std::string out;
    for (const auto& e : all) {
      auto r = ToLogRecordData(e.bytes);
      if (!r.ok() || !r->command) continue;
      if (std::holds_alternative<HistorySweepArgs>(r->command->args)) out += 'S';
      if (std::holds_alternative<IdentityExpiryArgs>(r->command->args)) out += 'E';
    }
    return out;
  }

  // The log's commands, in order.
  std::vector<CommandData> CommandRecords() {
    std::vector<LogEntry> all;
    EXPECT_TRUE(log_->Read(0, 100, &all).ok());
    std::vector<CommandData> out;
    for (const auto& e : all) {
      auto r = ToLogRecordData(e.bytes);
      if (r.ok() && r->command) out.push_back(*r->command);
    }
    return out;
  }

  DecisionSettings settings_ = [] {
    DecisionSettings s;
    s.history_keep_days = 2;
    s.identity_window = std::chrono::hours(72);
    return s;
  }();
  testing::TempDir dir_;
  ManualClock clock_{kDec1 + k0330 * kMinute - 1'000'000};  // 03:29:59
  std::unique_ptr<LogStore> log_;
};

TEST(DailyRunTest, ParsesTheTimeOfDayAndFindsTheDaysRun) {
  EXPECT_EQ(*ParseTimeOfDay("03:30"), k0330);
  EXPECT_EQ(*ParseTimeOfDay("23:59"), 23 * 60 + 59);
  EXPECT_EQ(ParseTimeOfDay("24:00").status().error_class(), ErrorClass::kConfig);
  EXPECT_EQ(ParseTimeOfDay("3:30").status().error_class(), ErrorClass::kConfig);
  // 23:00 airport time on Dec 1 is still Dec 1's day.
  const DailyRun r = DailyRunOf(kDec1 + 23 * kHour, kShanghai, k0330);
  EXPECT_EQ(r.day, 20261201);
  EXPECT_EQ(r.at, kDec1 + k0330 * kMinute);
}

TEST_F(DailySweepTest, AppendsOncePerAirportDayAtItsTimeAcrossARestart) {
  DailySweepStep early = Step();  // 03:29:59
  EXPECT_FALSE(early.appended);
  EXPECT_EQ(early.next_at, kDec1 + k0330 * kMinute);
  EXPECT_EQ(Commands(), "");

  clock_.Advance(std::chrono::seconds(1));  // 03:30:00
  DailySweepStep due = Step();
  EXPECT_TRUE(due.appended);
  EXPECT_EQ(due.day, 20261201);
  EXPECT_EQ(due.next_at, kDec1 + 24 * kHour + k0330 * kMinute);
  EXPECT_EQ(Commands(), "SE");
  EXPECT_TRUE(log_->CommandOffset(DaySweepId(20261201))->has_value());

  EXPECT_FALSE(Step().appended);  // the same day again
  clock_.Advance(std::chrono::minutes(1));
  Open();  // a restart (or a leader change on a copy of this log)
  EXPECT_FALSE(Step().appended);
  EXPECT_EQ(Commands(), "SE");

  clock_.Set(kDec1 + 24 * kHour + k0330 * kMinute);  // Dec 2, 03:30
  DailySweepStep next = Step();
  EXPECT_TRUE(next.appended);
  EXPECT_EQ(next.day, 20261202);
  EXPECT_EQ(Commands(), "SESE");
}

// A backup taken before the day's commands, restored later that day: the
// process then appends them again, later, and they must be the same commands
// (explicit limits from the day's run instant and the settings, issued at
// that instant) or the rebuilt digest differs from PostgreSQL's.
TEST_F(DailySweepTest, TheDaysCommandsDoNotDependOnWhenTheyAreAppended) {
  clock_.Set(kDec1 + 5 * kHour);  // 05:00
  ASSERT_TRUE(Step().appended);
  const std::vector<CommandData> first = CommandRecords();
  ASSERT_EQ(first.size(), 2U);
  const MicrosSinceEpoch at = kDec1 + k0330 * kMinute;
  EXPECT_EQ(std::get<HistorySweepArgs>(first[0].args).cutoff, kDec1 - 48 * kHour);
  EXPECT_EQ(std::get<IdentityExpiryArgs>(first[1].args).before, at - 72 * kHour);
  EXPECT_EQ(first[0].issued_at, at);
  EXPECT_EQ(first[1].issued_at, at);

  // An empty log again (the restored backup), at 21:00 the same day.
  log_.reset();
  std::filesystem::remove_all(dir_.path() + "/log");
  clock_.Set(kDec1 + 21 * kHour);
  Open();
  ASSERT_TRUE(Step().appended);
  EXPECT_EQ(CommandRecords(), first);
}

TEST_F(DailySweepTest, AProcessStartingLaterInTheDayAppendsThatDaysRun) {
  clock_.Set(kDec1 + 15 * kHour);  // 15:00, nothing appended at 03:30
  EXPECT_TRUE(Step().appended);
  EXPECT_EQ(Commands(), "SE");
}

}  // namespace
}  // namespace msgx
