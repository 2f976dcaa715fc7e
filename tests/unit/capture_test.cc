// Capture's gap rule against a scripted mailbox (no database, no sleeping).
// The same scenarios run against real PostgreSQL in
// tests/integration/capture_test.cc.
#include "stream/capture/capture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

namespace msgx {
namespace {

namespace fs = std::filesystem;
using std::chrono::milliseconds;
using std::chrono::minutes;

// Rows become visible when committed; transactions are plain numbers.
class FakeMailbox final : public Mailbox {
 public:
  void Commit(std::int64_t id) { rows_[id] = "<MSG>" + std::to_string(id) + "</MSG>"; }
  void Begin(std::uint64_t xid) { running_.insert(xid); }
  void End(std::uint64_t xid) { running_.erase(xid); }
  void SetSupportsStatus(bool s) { supports_ = s; }
  // The gap probe (MariaDB's locking read): off = kUnsupported.
  void SetProbe(bool p) { probe_ = p; }
  void Hold(std::int64_t id) { held_.insert(id); }
  void Release(std::int64_t id) { held_.erase(id); }
  int reads = 0;
  int probes = 0;

  Status ReadAfter(std::int64_t after, int limit, std::vector<MailboxRow>* out) override {
    ++reads;
    for (auto it = rows_.upper_bound(after); it != rows_.end() && limit > 0; ++it, --limit) {
      out->push_back(MailboxRow{it->first, it->second, std::nullopt});
    }
    return Status::Ok();
  }
  Status ReadRanges(std::span<const IdRange> ranges, int limit,
                    std::vector<MailboxRow>* out) override {
    for (const auto& [id, msg] : rows_) {
      for (const IdRange& r : ranges) {
        if (id >= r.first && id <= r.last && static_cast<int>(out->size()) < limit) {
          out->push_back(MailboxRow{id, msg, std::nullopt});
        }
      }
    }
    return Status::Ok();
  }
  bool SupportsTransactionStatus() const override { return supports_; }
  // The next `unknown_status` calls cannot tell (MariaDB's stale INNODB_TRX cache).
  int unknown_status = 0;
  Result<std::optional<TransactionIds>> InProgressTransactions() override {
    if (unknown_status > 0) {
      --unknown_status;
      return std::optional<TransactionIds>();
    }
    return std::optional<TransactionIds>(TransactionIds(running_.begin(), running_.end()));
  }
  Result<bool> AllEnded(const TransactionIds& txns) override {
    for (auto x : txns) {
      if (running_.contains(x)) return false;
    }
    return true;
  }
  Result<GapProbe> ProbeGap(const IdRange& range) override {
    if (!probe_) return GapProbe::kUnsupported;
    ++probes;
    for (std::int64_t id = range.first; id <= range.last; ++id) {
      if (held_.contains(id)) return GapProbe::kHeld;
      if (rows_.contains(id)) return GapProbe::kCommitted;
    }
    return GapProbe::kFree;
  }
  // The server's clock: the test's clock plus `server_ahead`.
  const Clock* clock = nullptr;
  MicrosSinceEpoch server_ahead = 0;
  int server_now_reads = 0;
  Result<MicrosSinceEpoch> ServerNow() override {
    ++server_now_reads;
    return clock->NowMicros() + server_ahead;
  }
  Result<std::int64_t> MaxId() override { return rows_.empty() ? 0 : rows_.rbegin()->first; }

 private:
  std::map<std::int64_t, std::string> rows_;
  std::set<std::uint64_t> running_;
  std::set<std::int64_t> held_;
  bool supports_ = true;
  bool probe_ = false;
};

class CaptureTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("msgx-capture-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    OpenAll();
  }
  void TearDown() override {
    capture_.reset();
    log_.reset();
    fs::remove_all(dir_);
  }
  void OpenAll() {
    auto l = LogStore::Open((dir_ / "log").string(), &clock_);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    log_ = std::move(l).value();
    mailbox_.clock = &clock_;
    auto c = Capture::Create(log_.get(), &mailbox_, &clock_, options_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    capture_ = std::move(c).value();
  }
  // Simulates kill -9: objects go away with no shutdown path, then reopen.
  void Crash() {
    capture_.reset();
    log_.reset();
    OpenAll();
  }
  PollOutcome Poll() {
    auto r = capture_->Poll();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : PollOutcome{};
  }
  // Mailbox ids in log order, late ones negated.
  std::vector<std::int64_t> LogIds() {
    std::vector<std::int64_t> ids;
    for (auto it = log_->NewIterator(0); it->Valid(); it->Next()) {
      ids.push_back(it->record()->late() ? -it->record()->mailbox_id()
                                         : it->record()->mailbox_id());
    }
    return ids;
  }

  fs::path dir_;
  ManualClock clock_{1'700'000'000'000'000};
  FakeMailbox mailbox_;
  CaptureOptions options_;
  std::unique_ptr<LogStore> log_;
  std::unique_ptr<Capture> capture_;
};

using Ids = std::vector<std::int64_t>;

// The host clock jumped three hours ahead while msgx was stopped; the
// mailbox server's did not: the log's times follow the server's.
TEST_F(CaptureTest, AHostClockJumpWhileStoppedIsBoundedByTheMailboxServersClock) {
  mailbox_.Commit(1);
  Poll();
  const MicrosSinceEpoch t0 = clock_.NowMicros();
  capture_.reset();
  log_.reset();
  clock_.Set(t0 + 3LL * 3'600'000'000);
  mailbox_.server_ahead = -3LL * 3'600'000'000;
  OpenAll();
  mailbox_.Commit(2);
  Poll();
  EXPECT_EQ(mailbox_.server_now_reads, 2);
  auto it = log_->NewIterator(1);
  ASSERT_TRUE(it->Valid());
  EXPECT_EQ(it->record()->mailbox_id(), 2);
  EXPECT_EQ(it->record()->append_micros(), t0);
}

TEST_F(CaptureTest, CapturesInIdOrderAndAsksForMoreWhileBatchesAreFull) {
  options_.batch_max = 2;
  Crash();
  for (int i = 1; i <= 3; ++i) mailbox_.Commit(i);
  PollOutcome a = Poll();
  EXPECT_EQ(a.appended, 2);
  EXPECT_TRUE(a.more);
  PollOutcome b = Poll();
  EXPECT_EQ(b.appended, 1);
  EXPECT_FALSE(b.more);
  EXPECT_EQ(LogIds(), (Ids{1, 2, 3}));
  EXPECT_EQ(log_->capture_progress()->watermark, 3);
}

TEST_F(CaptureTest, UncommittedLowerIdHoldsCaptureUntilItCommits) {
  mailbox_.Commit(1);
  mailbox_.Begin(100);  // holds id 2
  mailbox_.Commit(3);
  PollOutcome a = Poll();
  EXPECT_EQ(a.appended, 1);
  EXPECT_EQ(a.waiting_at, std::optional<std::int64_t>(2));
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  mailbox_.Commit(2);
  mailbox_.End(100);
  PollOutcome b = Poll();
  EXPECT_EQ(b.appended, 2);
  EXPECT_FALSE(b.waiting_at.has_value());
  EXPECT_EQ(LogIds(), (Ids{1, 2, 3}));
  EXPECT_TRUE(log_->capture_progress()->skipped.empty());
}

TEST_F(CaptureTest, RolledBackIdIsSkippedInTheSamePoll) {
  mailbox_.Commit(1);
  mailbox_.Commit(3);  // 2 was rolled back: no transaction holds it
  PollOutcome a = Poll();
  EXPECT_EQ(a.appended, 2);
  EXPECT_EQ(a.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
  auto p = log_->capture_progress();
  ASSERT_EQ(p->skipped.size(), 1u);
  EXPECT_EQ(p->skipped.begin()->second.reason, SkipReason::kTransactionsEnded);
}

TEST_F(CaptureTest, RollbackWhileWaitingIsSkippedOnTheNextPoll) {
  mailbox_.Commit(1);
  mailbox_.Begin(100);
  mailbox_.Commit(3);
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  mailbox_.End(100);  // rollback
  PollOutcome b = Poll();
  EXPECT_EQ(b.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
}

// A mailbox that cannot tell yet which transactions are in progress
// (MariaDB's INNODB_TRX cache): capture waits and asks again at each poll,
// and skips only once it knows that none holds the id.
TEST_F(CaptureTest, AGapIsNotSkippedUntilTheMailboxCanTellItsTransactions) {
  mailbox_.Commit(1);
  mailbox_.Commit(3);  // 2 was rolled back
  mailbox_.unknown_status = 2;
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  PollOutcome c = Poll();
  EXPECT_EQ(c.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
}

// The transactions taken polls after the gap was first seen still hold it:
// its holder is among them, and its row is captured in id order.
TEST_F(CaptureTest, TransactionsTakenLateStillHoldTheGap) {
  mailbox_.Commit(1);
  mailbox_.Begin(100);  // the holder of 2
  mailbox_.Commit(3);
  mailbox_.unknown_status = 1;
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  mailbox_.Commit(2);
  mailbox_.End(100);
  EXPECT_EQ(Poll().appended, 2);
  EXPECT_EQ(LogIds(), (Ids{1, 2, 3}));
}

// A mailbox that never can tell is bounded by capture.max-commit-delay.
TEST_F(CaptureTest, AMailboxThatNeverTellsIsBoundedByMaxCommitDelay) {
  options_.max_commit_delay = minutes(5);
  Crash();
  mailbox_.Commit(1);
  mailbox_.Commit(3);
  mailbox_.unknown_status = 1'000'000;
  EXPECT_TRUE(Poll().waiting_at.has_value());
  clock_.Advance(minutes(5));
  PollOutcome b = Poll();
  EXPECT_EQ(b.skipped_ids, 1);
  ASSERT_EQ(log_->capture_progress()->skipped.size(), 1u);
  EXPECT_EQ(log_->capture_progress()->skipped.begin()->second.reason, SkipReason::kCommitDelay);
}

TEST_F(CaptureTest, UnrelatedLongTransactionIsBoundedByMaxCommitDelay) {
  options_.max_commit_delay = minutes(5);
  Crash();
  mailbox_.Commit(1);
  mailbox_.Begin(7);  // idle in transaction elsewhere, never ends
  mailbox_.Commit(3);
  EXPECT_TRUE(Poll().waiting_at.has_value());
  clock_.Advance(minutes(4));
  EXPECT_TRUE(Poll().waiting_at.has_value());
  clock_.Advance(minutes(1));
  PollOutcome b = Poll();
  EXPECT_EQ(b.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
  EXPECT_EQ(log_->capture_progress()->skipped.begin()->second.reason, SkipReason::kCommitDelay);
  EXPECT_EQ(capture_->stats().skipped_by_delay, 1);
}

TEST_F(CaptureTest, WithoutTransactionStatusOnlyTheDelayApplies) {
  mailbox_.SetSupportsStatus(false);
  mailbox_.Commit(1);
  mailbox_.Commit(3);
  EXPECT_TRUE(Poll().waiting_at.has_value());
  clock_.Advance(options_.max_commit_delay);
  EXPECT_EQ(Poll().skipped_ids, 1);
}

TEST_F(CaptureTest, LateRowIsCapturedAfterACrashAndNeverDropped) {
  mailbox_.Commit(1);
  mailbox_.Commit(4);  // 2 and 3 missing, nobody holds them (no xid yet)
  EXPECT_EQ(Poll().skipped_ids, 2);
  EXPECT_EQ(LogIds(), (Ids{1, 4}));
  Crash();
  ASSERT_EQ(capture_->progress().skipped.size(), 1u);
  mailbox_.Commit(3);
  mailbox_.Commit(5);
  PollOutcome b = Poll();
  EXPECT_EQ(b.late, 1);
  EXPECT_EQ(b.appended, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 4, -3, 5}));
  auto p = log_->capture_progress();
  ASSERT_EQ(p->skipped.size(), 1u);
  EXPECT_EQ(p->skipped.begin()->second.first, 2);
  EXPECT_EQ(p->skipped.begin()->second.last, 2);
  EXPECT_EQ(p->late_captured, 1);
  // It is not captured twice.
  EXPECT_EQ(Poll().late, 0);
  EXPECT_EQ(LogIds(), (Ids{1, 4, -3, 5}));
}

TEST_F(CaptureTest, SkippedRangesAgeOutAndAreRecorded) {
  options_.skipped_retention = minutes(60);
  Crash();
  mailbox_.Commit(1);
  mailbox_.Commit(3);
  Poll();
  clock_.Advance(minutes(59));
  EXPECT_EQ(Poll().aged_out, 0);
  clock_.Advance(minutes(1));
  EXPECT_EQ(Poll().aged_out, 1);
  Crash();
  EXPECT_TRUE(capture_->progress().skipped.empty());
  // Recorded in the log store for audit, and forgotten by capture.
  auto recorded = [&] { return log_->capture_progress()->aged_out; };
  ASSERT_EQ(recorded().size(), 1u);
  EXPECT_EQ(recorded().begin()->second.first, 2);
  EXPECT_NE(recorded().begin()->second.aged_out_at, 0);
  EXPECT_TRUE(capture_->progress().aged_out.empty());
  mailbox_.Commit(4);
  Poll();  // an append after the age-out does not remove the record
  Crash();
  EXPECT_EQ(recorded().size(), 1u);
}

// A re-read of skipped ranges cut short by the batch limit ages nothing
// out: a row that exists beyond the limit is captured on the next poll.
TEST_F(CaptureTest, AgeOutWaitsForACompleteReread) {
  options_.skipped_retention = minutes(60);
  options_.batch_max = 2;
  Crash();
  mailbox_.Commit(1);
  mailbox_.Commit(6);  // 2..5 skipped
  while (Poll().more) {
  }
  ASSERT_EQ(capture_->progress().skipped.size(), 1u);
  mailbox_.Commit(2);  // three late rows, more than batch_max
  mailbox_.Commit(3);
  mailbox_.Commit(5);
  clock_.Advance(minutes(61));  // past the horizon
  PollOutcome cut = Poll();
  EXPECT_EQ(cut.late, 2);
  EXPECT_EQ(cut.aged_out, 0);  // the re-read was cut short
  EXPECT_TRUE(cut.more);
  PollOutcome rest = Poll();
  EXPECT_EQ(rest.late, 1);      // id 5 was captured, not aged out
  EXPECT_EQ(rest.aged_out, 1);  // then the rest (id 4) ages out
  EXPECT_EQ(LogIds(), (Ids{1, 6, -2, -3, -5}));
}

TEST_F(CaptureTest, StartAfterIdAppliesOnTheFirstStartOnly) {
  capture_.reset();
  log_.reset();
  fs::remove_all(dir_);
  options_.start_after_id = 10;
  OpenAll();
  for (int i = 9; i <= 12; ++i) mailbox_.Commit(i);
  Poll();
  EXPECT_EQ(LogIds(), (Ids{11, 12}));
  options_.start_after_id = 100;  // changed later: no effect
  Crash();
  mailbox_.Commit(13);
  Poll();
  EXPECT_EQ(LogIds(), (Ids{11, 12, 13}));
}

}  // namespace
}  // namespace msgx

namespace msgx {
namespace {

// The gap probe (MariaDB without PROCESS, docs/capture.md#the-gap-rule-on-mariadb).
class CaptureProbeTest : public CaptureTest {
 protected:
  void SetUp() override {
    CaptureTest::SetUp();
    mailbox_.SetSupportsStatus(false);
    mailbox_.SetProbe(true);
  }
};

TEST_F(CaptureProbeTest, AHeldIdIsWaitedForAndCapturedInOrderWhenItCommits) {
  mailbox_.Commit(1);
  mailbox_.Hold(2);
  mailbox_.Commit(3);
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  clock_.Advance(minutes(1));
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  mailbox_.Commit(2);
  mailbox_.Release(2);
  PollOutcome b = Poll();
  EXPECT_EQ(b.appended, 2);
  EXPECT_EQ(LogIds(), (Ids{1, 2, 3}));
  EXPECT_TRUE(log_->capture_progress()->skipped.empty());
}

TEST_F(CaptureProbeTest, AFreeIdIsSkippedInTheSamePoll) {
  mailbox_.Commit(1);
  mailbox_.Commit(3);  // 2 rolled back: nothing holds it
  PollOutcome a = Poll();
  EXPECT_EQ(a.appended, 2);
  EXPECT_EQ(a.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
  auto p = log_->capture_progress();
  ASSERT_EQ(p->skipped.size(), 1u);
  EXPECT_EQ(p->skipped.begin()->second.reason, SkipReason::kTransactionsEnded);
}

TEST_F(CaptureProbeTest, ARollbackWhileWaitingIsSkippedOnTheNextPoll) {
  mailbox_.Commit(1);
  mailbox_.Hold(2);
  mailbox_.Commit(3);
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  mailbox_.Release(2);  // rollback
  PollOutcome b = Poll();
  EXPECT_EQ(b.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
}

TEST_F(CaptureProbeTest, AHolderThatNeverEndsIsBoundedByMaxCommitDelayAndItsRowComesLate) {
  mailbox_.Commit(1);
  mailbox_.Hold(2);
  mailbox_.Commit(3);
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  clock_.Advance(options_.max_commit_delay);
  PollOutcome b = Poll();
  EXPECT_EQ(b.skipped_ids, 1);
  EXPECT_EQ(log_->capture_progress()->skipped.begin()->second.reason, SkipReason::kCommitDelay);
  mailbox_.Commit(2);
  mailbox_.Release(2);
  EXPECT_EQ(Poll().late, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3, -2}));
}

// auto_increment_increment = 2: every other id never exists; none is waited
// for.
TEST_F(CaptureProbeTest, IdsSteppingByTwoAreCapturedInOnePollWithoutWaiting) {
  for (std::int64_t id = 1; id <= 9; id += 2) mailbox_.Commit(id);
  PollOutcome a = Poll();
  EXPECT_EQ(a.appended, 5);
  EXPECT_EQ(a.skipped_ids, 4);
  EXPECT_FALSE(a.waiting_at.has_value());
  EXPECT_EQ(LogIds(), (Ids{1, 3, 5, 7, 9}));
}

// With transaction status too (MariaDB with PROCESS): the recorded
// transactions have ended, but the probe still finds the id held (a holder
// the transaction list had not shown): wait.
TEST_F(CaptureProbeTest, WithTransactionStatusAHeldIdIsNotSkippedWhenTheTransactionsEnded) {
  mailbox_.SetSupportsStatus(true);
  mailbox_.Commit(1);
  mailbox_.Hold(2);
  mailbox_.Commit(3);
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  mailbox_.Release(2);
  PollOutcome b = Poll();
  EXPECT_EQ(b.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
}

// A mailbox with neither (kUnsupported) waits for max-commit-delay as before.
TEST_F(CaptureProbeTest, WithoutAProbeAFreeIdWaitsForMaxCommitDelay) {
  mailbox_.SetProbe(false);
  mailbox_.Commit(1);
  mailbox_.Commit(3);
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  clock_.Advance(options_.max_commit_delay);
  EXPECT_EQ(Poll().skipped_ids, 1);
  EXPECT_EQ(mailbox_.probes, 0);
}

}  // namespace
}  // namespace msgx
