// Capture from a real MariaDB mailbox (tests/support: MariaDbServer), through
// least-privilege accounts: SELECT on the table only (the gap probe), and
// SELECT + PROCESS (INNODB_TRX). Uncommitted and rolled-back rows are made
// with real concurrent transactions; capture.max-commit-delay's time is a
// ManualClock, so nothing sleeps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <functional>
#include <map>
#include <thread>

#include "base/subprocess.h"
#include "codecs/sis_decoder.h"
#include "codecs/time_zone.h"
#include "stream/capture/capture.h"
#include "stream/capture/mailbox_ingest.h"
#include "stream/capture/mailbox_schema.h"
#include "stream/capture/mariadb_mailbox.h"
#include "stream/jobs/mariadb_mailbox_marks.h"
#include "stream/mariadb/mariadb_session.h"
#include "tests/support/cut_relay.h"
#include "tests/support/mailbox_reads.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

namespace fs = std::filesystem;
using std::chrono::minutes;
using Ids = std::vector<std::int64_t>;
constexpr std::size_t k17Mb = std::size_t{17} * 1024 * 1024;

// A writer of the mailbox (the other team's application): its own session,
// so that a transaction it starts stays open until Commit/Rollback.
class Writer {
 public:
  explicit Writer(const std::string& url)
      : s_(*ParseMariaDbUrl(url), MariaDbSession::Options{false, "+00:00"}) {}
  void Exec(const std::string& sql) {
    Status st = s_.Run("writer", sql, nullptr);
    ASSERT_TRUE(st.ok()) << st.ToString() << "\n" << sql.substr(0, 300);
  }
  std::int64_t Insert(const std::string& body, const std::string& table = "cminmsgs") {
    Exec("INSERT INTO " + table +
         " (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) VALUES (" +
         MariaDbSession::Quote(body) + ", '2026-11-30 10:11:12.345678', 'VALID')");
    std::vector<MariaDbRow> rows;
    EXPECT_TRUE(s_.Run("writer", "SELECT LAST_INSERT_ID()", &rows).ok());
    return rows.empty() ? 0 : std::stoll(*rows[0][0]);
  }
  void Begin() { Exec("START TRANSACTION"); }
  void Commit() { Exec("COMMIT"); }
  void Rollback() { Exec("ROLLBACK"); }

 private:
  MariaDbSession s_;
};

class MariaDbCaptureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    server_ = testing::MariaDbServer::Start().release();
    server_->Sql("mysql",
                 "CREATE USER 'capture'@'%' IDENTIFIED BY 'pw';"
                 "CREATE USER 'capture_process'@'%' IDENTIFIED BY 'pw';"
                 "GRANT PROCESS ON *.* TO 'capture_process'@'%';");
  }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    db_ = "mb_" + name.substr(0, 50);
    server_->Sql("mysql", "CREATE DATABASE IF NOT EXISTS `" + db_ + "`");
    server_->Sql(db_, kLocalMariaDbMailboxDdl);
    // Least privilege: SELECT on the mailbox table, nothing else.
    server_->Sql(db_, "GRANT SELECT ON `" + db_ +
                          "`.cminmsgs TO 'capture'@'%';"
                          "GRANT SELECT ON `" +
                          db_ + "`.cminmsgs TO 'capture_process'@'%';");
    dir_ = fs::temp_directory_path() /
           ("msgx-mariadb-capture-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(dir_);
    options_.max_commit_delay = minutes(5);
  }
  void TearDown() override {
    capture_.reset();
    log_.reset();
    mailbox_.reset();
    fs::remove_all(dir_);
  }

  void Open(const std::string& user = "capture", const std::string& table = "cminmsgs") {
    auto url = ParseMariaDbUrl(server_->Url(db_, user, "pw"));
    ASSERT_TRUE(url.ok()) << url.status().ToString();
    // Capture's time is the ManualClock; the mailbox spaces its INNODB_TRX
    // reads in real time, as the server's cache ages.
    mailbox_ = std::make_unique<MariaDbMailbox>(*url, table, MailboxColumns{},
                                                SystemClock::Default(), zone_);
    auto l = LogStore::Open((dir_ / "log").string(), &clock_);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    log_ = std::move(l).value();
    auto c = Capture::Create(log_.get(), mailbox_.get(), &clock_, options_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    capture_ = std::move(c).value();
  }
  std::string WriterUrl() const { return server_->Url(db_); }

  PollOutcome Poll() {
    auto r = capture_->Poll();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : PollOutcome{};
  }
  // Polls until `done(sum of outcomes)`, at most `polls` times, `apart` (150 ms) apart:
  // INNODB_TRX is a cache that InnoDB refreshes only when it has not been
  // read for 0.1 s (a reader polling faster keeps seeing the old contents,
  // found here), so the PROCESS rule sees an ended transaction a moment
  // late. The ManualClock does not move: max-commit-delay plays no part.
  PollOutcome PollUntil(const std::function<bool(const PollOutcome&)>& done, int polls = 40,
                        std::chrono::milliseconds apart = std::chrono::milliseconds(150)) {
    PollOutcome sum;
    for (int i = 0; i < polls; ++i) {
      PollOutcome p = Poll();
      sum.appended += p.appended;
      sum.skipped_ids += p.skipped_ids;
      sum.late += p.late;
      if (done(sum)) break;
      std::this_thread::sleep_for(apart);
    }
    return sum;
  }
  Ids LogIds() {
    Ids ids;
    for (auto it = log_->NewIterator(0); it->Valid(); it->Next()) {
      if (it->record()->kind() != fb::RecordKind::MAILBOX_MESSAGE) continue;
      ids.push_back(it->record()->late() ? -it->record()->mailbox_id()
                                         : it->record()->mailbox_id());
    }
    return ids;
  }
  // The record of mailbox id `id` as appended.
  std::optional<LogRecordData> Record(std::int64_t id) {
    std::vector<LogEntry> e;
    EXPECT_TRUE(log_->Read(0, 1000, &e).ok());
    for (const LogEntry& entry : e) {
      auto rec = ToLogRecordData(entry.bytes);
      if (rec.ok() && rec->mailbox_id == id) return *rec;
    }
    return std::nullopt;
  }
  std::string LogText(std::int64_t id) {
    auto rec = Record(id);
    return rec ? rec->raw : "(not in the log)";
  }

  // Mailbox ids 1 and 3 committed by `b` around 2, which `a` inserted and
  // has not committed: the first poll captures 1 and waits at 2.
  void HoldTheSecondId(Writer& a, Writer& b) {
    EXPECT_EQ(b.Insert("<MSG>1</MSG>"), 1);
    a.Begin();
    EXPECT_EQ(a.Insert("<MSG>2</MSG>"), 2);
    EXPECT_EQ(b.Insert("<MSG>3</MSG>"), 3);
    PollOutcome p = Poll();
    EXPECT_EQ(p.appended, 1);
    EXPECT_EQ(p.waiting_at, std::optional<std::int64_t>(2));
  }

  // A committed lower row, an uncommitted insert, a committed higher row:
  // capture waits at the uncommitted one (4 minutes < max-commit-delay),
  // then takes both in id order once it commits, several polls later.
  void LateCommitIsCapturedInIdOrder() {
    Writer a(WriterUrl()), b(WriterUrl());
    HoldTheSecondId(a, b);
    for (int i = 0; i < 4; ++i) {
      clock_.Advance(minutes(1));
      EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
    }
    a.Commit();
    PollOutcome q = Poll();
    EXPECT_EQ(q.appended, 2);
    EXPECT_FALSE(q.waiting_at.has_value());
    EXPECT_EQ(LogIds(), (Ids{1, 2, 3}));
    EXPECT_TRUE(log_->capture_progress()->skipped.empty());
  }

  // A rolled-back insert: skipped at the first poll after the rollback, not
  // after max-commit-delay.
  void RollbackIsSkippedAtOnce(bool next_poll) {
    Writer a(WriterUrl()), b(WriterUrl());
    HoldTheSecondId(a, b);
    a.Rollback();
    auto skipped = [](const PollOutcome& o) { return o.skipped_ids > 0; };
    PollOutcome p = next_poll ? Poll() : PollUntil(skipped);
    EXPECT_EQ(p.skipped_ids, 1);
    EXPECT_EQ(p.appended, 1);
    EXPECT_EQ(LogIds(), (Ids{1, 3}));
    ASSERT_EQ(log_->capture_progress()->skipped.size(), 1u);
    EXPECT_EQ(log_->capture_progress()->skipped.begin()->second.reason,
              SkipReason::kTransactionsEnded);
    // Rolled back before capture saw anything: skipped in the same poll.
    a.Begin();
    a.Insert("<MSG>4</MSG>");
    a.Rollback();
    b.Insert("<MSG>5</MSG>");
    PollOutcome r = next_poll ? Poll() : PollUntil(skipped);
    EXPECT_EQ(r.skipped_ids, 1);
    EXPECT_EQ(LogIds(), (Ids{1, 3, 5}));
  }

  static testing::MariaDbServer* server_;
  std::string db_;
  fs::path dir_;
  ManualClock clock_{1'764'460'000'000'000};
  CaptureOptions options_;
  std::unique_ptr<MariaDbMailbox> mailbox_;
  TimeZone zone_ = TimeZone::Fixed("UTC", 0);  // mailbox.time-zone for Open()
  std::unique_ptr<LogStore> log_;
  std::unique_ptr<Capture> capture_;
};

testing::MariaDbServer* MariaDbCaptureTest::server_ = nullptr;

TEST_F(MariaDbCaptureTest, CapturesInIdOrderWithTheReceivedTimeAsUtc) {
  Open();
  Writer w(WriterUrl());
  for (int i = 1; i <= 5; ++i) w.Insert("<MSG>" + std::to_string(i) + "</MSG>");
  options_.batch_max = 3;
  capture_.reset();
  log_.reset();
  Open();
  EXPECT_EQ(Poll().appended, 3);
  EXPECT_EQ(Poll().appended, 2);
  EXPECT_EQ(LogIds(), (Ids{1, 2, 3, 4, 5}));
  EXPECT_EQ(LogText(4), "<MSG>4</MSG>");
  // 2026-11-30 10:11:12.345678 (a DATETIME) read as UTC, as on PostgreSQL.
  EXPECT_EQ(Record(1)->received_at, std::optional<MicrosSinceEpoch>(1'796'033'472'345'678));
  EXPECT_EQ(mailbox_->has_process(), std::optional<bool>(false));
}

TEST_F(MariaDbCaptureTest, WithoutProcessALateCommitIsCapturedInIdOrder) {
  Open("capture");
  LateCommitIsCapturedInIdOrder();
  EXPECT_FALSE(mailbox_->SupportsTransactionStatus());
}

TEST_F(MariaDbCaptureTest, WithProcessALateCommitIsCapturedInIdOrder) {
  Open("capture_process");
  LateCommitIsCapturedInIdOrder();
  EXPECT_TRUE(mailbox_->SupportsTransactionStatus());
}

TEST_F(MariaDbCaptureTest, WithoutProcessARollbackIsSkippedAtOnce) {
  Open("capture");
  RollbackIsSkippedAtOnce(/*next_poll=*/true);
}

TEST_F(MariaDbCaptureTest, WithProcessARollbackIsSkippedAtOnce) {
  Open("capture_process");
  RollbackIsSkippedAtOnce(/*next_poll=*/false);
}

// Capture polling every 20 ms (pipeline.poll-interval's floor is 50 ms)
// reads INNODB_TRX no more often than the cache can refill, so it sees
// the rollback's transaction end and skips the id well before
// max-commit-delay (the ManualClock does not move).
TEST_F(MariaDbCaptureTest, WithProcessFastPollingStillSeesTheTransactionEnd) {
  Open("capture_process");
  Writer a(WriterUrl()), b(WriterUrl());
  HoldTheSecondId(a, b);
  // Two more polls 0.15 s apart: capture has taken the transactions, `a` among them.
  EXPECT_EQ(PollUntil([](const PollOutcome&) { return false; }, 2).skipped_ids, 0);
  // Fast polls from here on, before and after the rollback: a reader that
  // read INNODB_TRX at each of them would keep the cache from refilling.
  const auto fast = std::chrono::milliseconds(20);
  EXPECT_EQ(PollUntil([](const PollOutcome&) { return false; }, 10, fast).skipped_ids, 0);
  a.Rollback();
  PollOutcome p = PollUntil([](const PollOutcome& o) { return o.skipped_ids > 0; }, 150, fast);
  EXPECT_EQ(p.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
}

// With PROCESS, an unrelated open transaction holds every gap until it ends
// (or max-commit-delay); the probe alone does not wait for it.
TEST_F(MariaDbCaptureTest, AnUnrelatedOpenTransactionDelaysOnlyTheProcessRule) {
  Open("capture");
  Writer idle(WriterUrl()), a(WriterUrl()), b(WriterUrl());
  idle.Begin();
  idle.Exec("UPDATE cminmsgs SET cminmsgs_status = 'X' WHERE cminmsgs_id = -1");
  idle.Exec("INSERT INTO cminmsgs (cminmsgs_clob_msg) SELECT 'x' FROM DUAL WHERE 1 = 0");
  a.Begin();
  a.Insert("<MSG>1</MSG>");
  a.Rollback();
  b.Insert("<MSG>2</MSG>");
  EXPECT_EQ(Poll().skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{2}));

  // The same mailbox through PROCESS, from the start: waits while the
  // unrelated transaction is open, skips once it ends.
  capture_.reset();
  log_.reset();
  fs::remove_all(dir_);
  Open("capture_process");
  PollOutcome p = Poll();
  EXPECT_EQ(p.waiting_at, std::optional<std::int64_t>(1));
  // Four polls 0.15 s apart: the picture is current by then, and holds `idle`.
  PollOutcome q = PollUntil([](const PollOutcome&) { return false; }, 4);
  EXPECT_EQ(q.skipped_ids, 0);
  EXPECT_EQ(q.appended, 0);
  EXPECT_TRUE(LogIds().empty());
  idle.Rollback();
  EXPECT_EQ(PollUntil([](const PollOutcome& o) { return o.skipped_ids > 0; }).skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{2}));
}

// Someone else (a monitoring query) reads INNODB_TRX just before an
// unrelated transaction begins: for 0.1 s the server's cache holds a
// picture without it, which capture must not take for the current one
// (a CI failure: the gap was skipped at once).
TEST_F(MariaDbCaptureTest, WithProcessAnOlderPictureOfTheTransactionsIsNotTrusted) {
  Open("capture_process");
  Writer idle(WriterUrl()), a(WriterUrl()), b(WriterUrl());
  b.Insert("<MSG>1</MSG>");
  EXPECT_EQ(Poll().appended, 1);  // connected; the PROCESS check read INNODB_TRX
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // capture may read it again
  MariaDbSession monitor(*ParseMariaDbUrl(server_->Url(db_, "capture_process", "pw")),
                         MariaDbSession::Options{});
  ASSERT_TRUE(
      monitor.Run("monitor", "SELECT COUNT(*) FROM information_schema.INNODB_TRX", nullptr).ok());
  idle.Begin();
  idle.Exec("UPDATE cminmsgs SET cminmsgs_status = 'X' WHERE cminmsgs_id = -1");
  a.Begin();
  a.Insert("<MSG>2</MSG>");
  a.Rollback();
  b.Insert("<MSG>3</MSG>");
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(2));
  EXPECT_EQ(PollUntil([](const PollOutcome&) { return false; }, 4).skipped_ids, 0);
  EXPECT_EQ(LogIds(), (Ids{1}));
  idle.Rollback();
  EXPECT_EQ(PollUntil([](const PollOutcome& o) { return o.skipped_ids > 0; }).skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3}));
}

// The holder never commits within max-commit-delay: the id is skipped, and
// captured late when it does commit; never lost.
TEST_F(MariaDbCaptureTest, AHolderPastMaxCommitDelayIsSkippedAndItsRowComesLate) {
  Open();
  Writer a(WriterUrl()), b(WriterUrl());
  HoldTheSecondId(a, b);
  clock_.Advance(options_.max_commit_delay);
  EXPECT_EQ(Poll().skipped_ids, 1);
  a.Commit();
  EXPECT_EQ(Poll().late, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 3, -2}));
}

// auto_increment_increment = 3 (Galera, multi-source): the ids between are
// never allocated here; capture takes every row in one poll, waiting for none.
TEST_F(MariaDbCaptureTest, IdsSteppingByMoreThanOneAreNotWaitedFor) {
  Open();
  Writer w(WriterUrl());
  w.Exec("SET SESSION auto_increment_increment = 3, auto_increment_offset = 1");
  for (int i = 0; i < 4; ++i) w.Insert("<MSG/>");
  PollOutcome p = Poll();
  EXPECT_EQ(p.appended, 4);
  EXPECT_FALSE(p.waiting_at.has_value());
  EXPECT_EQ(LogIds(), (Ids{1, 4, 7, 10}));
}

// Text: 4-byte UTF-8 byte for byte; a legacy latin1 column converted to
// UTF-8 by the utf8mb4 connection; bytes invalid for the column's charset as
// the (non-strict) server stored them; a 17 MB row.
TEST_F(MariaDbCaptureTest, TextArrivesAsUtf8ByteForByte) {
  Writer w(WriterUrl());
  const std::string emoji = "<MSG>\xF0\x9F\x9B\xAB \xE2\x9C\x88 \xC3\xA9</MSG>";  // 🛫 ✈ é
  w.Insert(emoji);
  const std::string big = "<MSG>" + std::string(k17Mb, 'x') + "</MSG>";
  w.Insert(big);
  // Strict mode refuses bytes that are not utf8mb4 (1366): an outage of the
  // writer, nothing stored.
  Status refused =
      MariaDbSession(*ParseMariaDbUrl(WriterUrl()), {false, "+00:00"})
          .Run("writer", "INSERT INTO cminmsgs (cminmsgs_clob_msg) VALUES (_binary'\xFF\xFE')",
               nullptr);
  EXPECT_FALSE(refused.ok());
  options_.batch_max = 1;
  Open();
  PollOutcome p = Poll();
  EXPECT_EQ(p.appended, 1);
  Poll();
  EXPECT_EQ(LogIds(), (Ids{1, 2}));
  EXPECT_EQ(LogText(1), emoji);
  EXPECT_EQ(LogText(2).size(), big.size());
  EXPECT_EQ(LogText(2), big);

  server_->Sql(db_,
               "CREATE TABLE legacy (cminmsgs_id BIGINT AUTO_INCREMENT PRIMARY KEY, "
               "cminmsgs_clob_msg LONGTEXT CHARACTER SET latin1 NOT NULL, "
               "cminmsgs_date_received DATETIME NULL, cminmsgs_status VARCHAR(20)) "
               "ENGINE=InnoDB;"
               "GRANT SELECT ON `" +
                   db_ + "`.legacy TO 'capture'@'%';");
  Writer legacy(WriterUrl());
  legacy.Insert("<MSG>caf\xC3\xA9</MSG>", "legacy");  // é, stored as latin1 0xE9
  legacy.Exec("SET SESSION sql_mode = ''");
  legacy.Insert("<MSG>\xE2\x82\xAC\xF0\x9F\x9B\xAB</MSG>", "legacy");  // € fits, 🛫 does not
  capture_.reset();
  log_.reset();
  fs::remove_all(dir_);
  options_.batch_max = 1000;
  Open("capture", "legacy");
  Poll();
  EXPECT_EQ(LogIds(), (Ids{1, 2}));
  EXPECT_EQ(LogText(1), "<MSG>caf\xC3\xA9</MSG>");
  EXPECT_EQ(LogText(2), "<MSG>\xE2\x82\xAC?</MSG>");
}

// max_allowed_packet bounds what a writer can send (a 17 MB INSERT is
// refused at 16 MiB), not what capture reads: a 17 MB row already stored is
// read whole through a connection opened under the 16 MiB setting.
TEST_F(MariaDbCaptureTest, MaxAllowedPacketBoundsTheWriterNotCapture) {
  Writer w(WriterUrl());
  const std::string big = "<MSG>" + std::string(k17Mb, 'y') + "</MSG>";
  w.Insert(big);
  server_->Sql("mysql", "SET GLOBAL max_allowed_packet = 16777216");
  Status refused = MariaDbSession(*ParseMariaDbUrl(WriterUrl()), {false, "+00:00"})
                       .Run("writer",
                            "INSERT INTO cminmsgs (cminmsgs_clob_msg) VALUES (" +
                                MariaDbSession::Quote(big) + ")",
                            nullptr);
  Open();
  auto r = capture_->Poll();
  server_->Sql("mysql", "SET GLOBAL max_allowed_packet = 67108864");
  EXPECT_FALSE(refused.ok());
  EXPECT_EQ(refused.error_class(), ErrorClass::kInfra);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(LogIds(), (Ids{1}));
  EXPECT_EQ(LogText(1), big);
}

// The server goes away and comes back: outages, then capture resumes.
TEST_F(MariaDbCaptureTest, AServerOutageIsAnOutageAndCaptureResumes) {
  Open();
  Writer w(WriterUrl());
  w.Insert("<MSG>1</MSG>");
  EXPECT_EQ(Poll().appended, 1);
  server_->Stop();
  auto r = capture_->Poll();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfra);
  EXPECT_NE(r.status().message().find("connection"), std::string::npos) << r.status().ToString();
  server_->Restart();
  Writer w2(WriterUrl());
  w2.Insert("<MSG>2</MSG>");
  EXPECT_EQ(Poll().appended, 1);
  EXPECT_EQ(LogIds(), (Ids{1, 2}));
}

// The network drops in the middle of a result set, without a word from the
// server: an outage, never an empty answer. libmariadb closes the handle and
// clears the field count as it meets the loss, so the session must read
// mysql_errno, not the field count alone (an empty answer here would let
// capture's gap probe and re-reads take a held or unread range for free).
TEST_F(MariaDbCaptureTest, AConnectionLostInTheMiddleOfAResultIsAnOutageNotAnEmptyAnswer) {
  auto relay = testing::CutRelay::Start(server_->port());
  ASSERT_TRUE(relay.ok()) << relay.status().ToString();
  auto url = ParseMariaDbUrl(WriterUrl());
  ASSERT_TRUE(url.ok()) << url.status().ToString();
  url->host = "127.0.0.1";
  url->socket.clear();
  url->port = (*relay)->port();
  MariaDbSession s(*url, MariaDbSession::Options{});
  std::vector<MariaDbRow> rows;
  ASSERT_TRUE(s.Run("connect", "SELECT 1", &rows).ok());
  // About 1.1 MB of rows: the cut falls after their first 64 KiB.
  const std::string big = "SELECT seq, REPEAT('x', 100) FROM seq_1_to_10000";
  (*relay)->CutAfterServerBytes(64 * 1024);
  rows.clear();
  Status lost = s.Run("read", big, &rows);
  EXPECT_EQ((*relay)->cuts(), 1);
  ASSERT_FALSE(lost.ok()) << "an answer of " << rows.size() << " rows";
  EXPECT_EQ(lost.error_class(), ErrorClass::kInfra);
  EXPECT_TRUE(rows.empty());
  // The next call connects again and reads every row.
  rows.clear();
  Status again = s.Run("read again", big, &rows);
  ASSERT_TRUE(again.ok()) << again.ToString();
  EXPECT_EQ(rows.size(), 10000U);
}

}  // namespace
}  // namespace msgx

namespace msgx {
namespace {

// The processed mark on MariaDB (stream/jobs/mariadb_mailbox_marks.h),
// through an account with SELECT and UPDATE of the two mark columns only.
class MariaDbMarksTest : public MariaDbCaptureTest {
 protected:
  void SetUp() override {
    MariaDbCaptureTest::SetUp();
    server_->Sql(db_,
                 "CREATE USER IF NOT EXISTS 'marker'@'%' IDENTIFIED BY 'pw';"
                 "GRANT SELECT, UPDATE (cminmsgs_date_processed, cminmsgs_status) ON `" +
                     db_ + "`.cminmsgs TO 'marker'@'%';");
  }
  std::unique_ptr<MariaDbMailboxMarks> Marks(const std::string& user) {
    return std::make_unique<MariaDbMailboxMarks>(*ParseMariaDbUrl(server_->Url(db_, user, "pw")),
                                                 "cminmsgs", MailboxColumns{});
  }
  std::string Row(std::int64_t id) {
    return server_->Sql(db_,
                        "SELECT cminmsgs_date_processed, cminmsgs_status FROM cminmsgs WHERE "
                        "cminmsgs_id = " +
                            std::to_string(id));
  }
};

const MicrosSinceEpoch kAt = 1'796'033'472'345'678;  // 2026-11-30 10:11:12.345678 UTC

TEST_F(MariaDbMarksTest, MarksFromNullOnlyAndSaysWhatItFoundForEveryRow) {
  Writer w(WriterUrl());
  for (int i = 1; i <= 3; ++i) w.Insert("<MSG/>");
  w.Exec(
      "UPDATE cminmsgs SET cminmsgs_date_processed = '2026-01-01 00:00:00', "
      "cminmsgs_status = 'OTHER' WHERE cminmsgs_id = 3");
  auto marks = Marks("marker");
  const std::vector<MarkRequest> ask = {{1, kAt}, {2, kAt + 1}, {3, kAt}, {9, kAt}};
  std::vector<MailboxMarkSeen> seen;
  Status s = marks->MarkFromNull(ask, "PROCESSED", &seen);
  ASSERT_TRUE(s.ok()) << s.ToString();
  std::map<std::int64_t, MailboxMarkSeen> by_id;
  for (const auto& x : seen) by_id[x.id] = x;
  ASSERT_EQ(by_id.size(), 4u);
  EXPECT_EQ(by_id[1].kind, MailboxMarkSeen::Kind::kWritten);
  EXPECT_EQ(by_id[2].kind, MailboxMarkSeen::Kind::kWritten);
  EXPECT_EQ(by_id[3].kind, MailboxMarkSeen::Kind::kFound);
  EXPECT_EQ(by_id[3].status, std::optional<std::string>("OTHER"));
  EXPECT_EQ(by_id[3].processed, std::optional<MicrosSinceEpoch>(1'767'225'600'000'000));
  EXPECT_EQ(by_id[9].kind, MailboxMarkSeen::Kind::kMissing);
  EXPECT_EQ(Row(1), "2026-11-30 10:11:12.345678\tPROCESSED\n");
  EXPECT_EQ(Row(2), "2026-11-30 10:11:12.345679\tPROCESSED\n");
  EXPECT_EQ(Row(3), "2026-01-01 00:00:00.000000\tOTHER\n");

  // Again: nothing is overwritten; its own mark is found, read back exactly.
  seen.clear();
  ASSERT_TRUE(marks->MarkFromNull(std::vector<MarkRequest>{{1, kAt + 99}}, "AGAIN", &seen).ok());
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].kind, MailboxMarkSeen::Kind::kFound);
  EXPECT_EQ(seen[0].processed, std::optional<MicrosSinceEpoch>(kAt));
  EXPECT_EQ(Row(1), "2026-11-30 10:11:12.345678\tPROCESSED\n");
}

TEST_F(MariaDbMarksTest, WithoutTheUpdateGrantOrOnAReadOnlyServerNothingIsWritten) {
  Writer w(WriterUrl());
  w.Insert("<MSG/>");
  std::vector<MailboxMarkSeen> seen;
  Status denied =
      Marks("capture")->MarkFromNull(std::vector<MarkRequest>{{1, kAt}}, "PROCESSED", &seen);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error_class(), ErrorClass::kInfra);
  EXPECT_NE(denied.message().find("privileges"), std::string::npos) << denied.ToString();
  EXPECT_TRUE(seen.empty());
  EXPECT_EQ(Row(1), "NULL\tVALID\n");

  server_->Sql("mysql", "SET GLOBAL read_only = 1");
  Status ro = Marks("marker")->MarkFromNull(std::vector<MarkRequest>{{1, kAt}}, "PROCESSED", &seen);
  server_->Sql("mysql", "SET GLOBAL read_only = 0");
  ASSERT_FALSE(ro.ok());
  EXPECT_EQ(ro.error_class(), ErrorClass::kInfra);
  EXPECT_NE(ro.message().find("read-only"), std::string::npos) << ro.ToString();
  EXPECT_EQ(Row(1), "NULL\tVALID\n");
}

}  // namespace
}  // namespace msgx

namespace msgx {
namespace {

// POST /cminmsgs/send's write path on MariaDB (MailboxIngest), through an
// account with INSERT + SELECT on the table; what it stores is captured.
TEST_F(MariaDbCaptureTest, TheIngestStoresARowThatCaptureReads) {
  server_->Sql(db_,
               "CREATE USER IF NOT EXISTS 'ingest'@'%' IDENTIFIED BY 'pw';"
               "GRANT SELECT, INSERT ON `" +
                   db_ + "`.cminmsgs TO 'ingest'@'%';");
  auto zone = TimeZone::Load("Asia/Shanghai");
  ASSERT_TRUE(zone.ok()) << zone.status().ToString();
  sis::SisDecoder decoder(*zone);
  Config config;
  config.mailbox_url = server_->Url(db_, "ingest", "pw");
  MailboxIngest ingest(config, &decoder, &clock_);
  // A corpus message: META decodes (SNDR AODB, SEQN 1243, TYPE ABDG, STYP
  // ADD), and its text has Chinese characters.
  Result<std::string> read = ReadFileToString(MSGX_CORPUS_DIR "/ABDG-ADD-1.xml");
  ASSERT_TRUE(read.ok()) << read.status().ToString();
  const std::string body = *read;
  auto id = ingest.Store(body, "application/xml; charset=utf-8");
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, 1);
  auto bad = ingest.Store("<MSG>", "application/xml");
  EXPECT_EQ(bad.status().error_class(), ErrorClass::kMalformed);
  EXPECT_EQ(server_->Sql(db_,
                         "SELECT cminmsgs_status, cminmsgs_subsystem_name, "
                         "cminmsgs_subsystem_sequence, cminmsgs_subsystem_type FROM cminmsgs"),
            "VALID\tAODB\t1243\tABDG\n");
  // Written in mailbox.time-zone (not set: airport.timezone, +08:00), read
  // back as the instant.
  EXPECT_EQ(server_->Sql(db_,
                         "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01', cminmsgs_date_received) "
                         "FROM cminmsgs"),
            std::to_string(clock_.NowMicros() + 8 * 3'600'000'000LL) + "\n");
  zone_ = *zone;
  Open();
  Poll();
  EXPECT_EQ(LogIds(), (Ids{1}));
  EXPECT_EQ(LogText(1), body);
  EXPECT_EQ(Record(1)->received_at, std::optional<MicrosSinceEpoch>(clock_.NowMicros()));
}

}  // namespace
}  // namespace msgx

namespace msgx {
namespace {

// mailbox.time-zone on MariaDB (stream/mariadb/mariadb_time.h): a DATETIME
// received column is a wall-clock reading in the zone, across a DST change,
// in two zones; a TIMESTAMP column is an instant whatever the zone.
constexpr MicrosSinceEpoch kSecond = 1'000'000;

TimeZone Zone(const std::string& name) {
  auto z = TimeZone::Load(name);
  EXPECT_TRUE(z.ok()) << z.status().ToString();
  return z.ok() ? std::move(z).value() : TimeZone::Fixed("UTC", 0);
}

TEST_F(MariaDbCaptureTest, ADatetimeIsReadInTheMailboxTimeZoneAcrossDst) {
  Writer w(WriterUrl());
  // Berlin leaves CET (+01:00) for CEST (+02:00) at 2026-03-29 02:00 local;
  // New York leaves EST (-05:00) for EDT (-04:00) at 2026-03-08 02:00 local.
  for (const char* local : {"2026-03-29 01:30:00", "2026-03-29 03:30:00.25", "2026-03-08 01:30:00",
                            "2026-03-08 03:30:00"}) {
    w.Exec(std::string("INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received) VALUES "
                       "('<MSG/>', '") +
           local + "')");
  }
  const std::string url = server_->Url(db_, "capture", "pw");
  MariaDbMailbox berlin(*ParseMariaDbUrl(url), "cminmsgs", MailboxColumns{}, SystemClock::Default(),
                        Zone("Europe/Berlin"));
  auto b = testing::ReceivedById(berlin);
  EXPECT_EQ(b[1], 1'774'744'200 * kSecond);            // 2026-03-29T00:30:00Z
  EXPECT_EQ(b[2], 1'774'747'800 * kSecond + 250'000);  // 2026-03-29T01:30:00.25Z
  MariaDbMailbox new_york(*ParseMariaDbUrl(url), "cminmsgs", MailboxColumns{},
                          SystemClock::Default(), Zone("America/New_York"));
  auto n = testing::ReceivedById(new_york);
  EXPECT_EQ(n[3], 1'772'951'400 * kSecond);  // 2026-03-08T06:30:00Z
  EXPECT_EQ(n[4], 1'772'955'000 * kSecond);  // 2026-03-08T07:30:00Z

  // A TIMESTAMP column holds an instant: no zone applied on top.
  server_->Sql(db_,
               "CREATE TABLE ts_mailbox (cminmsgs_id BIGINT AUTO_INCREMENT PRIMARY KEY, "
               "cminmsgs_clob_msg LONGTEXT NOT NULL, cminmsgs_date_received TIMESTAMP(6) NULL) "
               "ENGINE=InnoDB;"
               "GRANT SELECT ON `" +
                   db_ + "`.ts_mailbox TO 'capture'@'%';");
  w.Exec("SET SESSION time_zone = '+02:00'");
  w.Exec(
      "INSERT INTO ts_mailbox (cminmsgs_clob_msg, cminmsgs_date_received) VALUES "
      "('<MSG/>', '2026-03-29 03:30:00')");
  MariaDbMailbox ts(*ParseMariaDbUrl(url), "ts_mailbox", MailboxColumns{}, SystemClock::Default(),
                    Zone("Europe/Berlin"));
  EXPECT_EQ(testing::ReceivedById(ts)[1], 1'774'747'800 * kSecond);  // 2026-03-29T01:30:00Z
}

// The processed mark writes the mailbox zone's wall-clock reading into a
// DATETIME column and reads it back as the same instant.
TEST_F(MariaDbMarksTest, TheMarkWritesTheMailboxTimeZonesLocalTime) {
  Writer w(WriterUrl());
  for (int i = 1; i <= 2; ++i) w.Insert("<MSG/>");
  auto marks =
      std::make_unique<MariaDbMailboxMarks>(*ParseMariaDbUrl(server_->Url(db_, "marker", "pw")),
                                            "cminmsgs", MailboxColumns{}, Zone("Europe/Berlin"));
  const MicrosSinceEpoch winter = 1'774'744'200 * kSecond;      // 2026-03-29T00:30:00Z
  const MicrosSinceEpoch summer = 1'774'747'800 * kSecond + 7;  // 2026-03-29T01:30:00.000007Z
  std::vector<MailboxMarkSeen> seen;
  Status s =
      marks->MarkFromNull(std::vector<MarkRequest>{{1, winter}, {2, summer}}, "PROCESSED", &seen);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(Row(1), "2026-03-29 01:30:00.000000\tPROCESSED\n");
  EXPECT_EQ(Row(2), "2026-03-29 03:30:00.000007\tPROCESSED\n");
  seen.clear();
  ASSERT_TRUE(marks->MarkFromNull(std::vector<MarkRequest>{{1, 0}, {2, 0}}, "AGAIN", &seen).ok());
  std::map<std::int64_t, MailboxMarkSeen> by_id;
  for (const auto& x : seen) by_id[x.id] = x;
  EXPECT_EQ(by_id[1].kind, MailboxMarkSeen::Kind::kFound);
  EXPECT_EQ(by_id[1].processed, std::optional<MicrosSinceEpoch>(winter));
  EXPECT_EQ(by_id[2].processed, std::optional<MicrosSinceEpoch>(summer));
}

}  // namespace
}  // namespace msgx
