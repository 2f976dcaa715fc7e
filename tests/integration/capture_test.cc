// Capture and command intake against a real PostgreSQL (tests/support).
//
// Each test gets its own mailbox database, so ids start at 1. Uncommitted
// and rolled-back rows are made with real concurrent transactions; time for
// capture.max-commit-delay is a ManualClock, so nothing sleeps for minutes.
#include "stream/capture/capture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <pqxx/pqxx>

#include "migrations/migrator.h"
#include "stream/capture/command_intake.h"
#include "stream/capture/mailbox_schema.h"
#include "stream/capture/pg_mailbox.h"
#include "tests/support/mailbox_reads.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

namespace fs = std::filesystem;
using std::chrono::minutes;
using Ids = std::vector<std::int64_t>;

std::int64_t Insert(pqxx::transaction_base& tx, const std::string& body) {
  pqxx::result r = tx.exec_params(
      "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status) "
      "VALUES ($1, TIMESTAMP '2026-11-30 10:11:12.345678', 'VALID') RETURNING cminmsgs_id",
      body);
  return r[0][0].as<std::int64_t>();
}

class CaptureIntegrationTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { server_ = testing::PgServer::Start().release(); }
  static void TearDownTestSuite() {
    delete server_;
    server_ = nullptr;
  }

  void SetUp() override {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    db_ = "mb_" + name.substr(0, 50);
    server_->CreateDatabase(db_);
    server_->Psql(db_, kLocalMailboxDdl);
    url_ = server_->Url(db_);
    dir_ =
        fs::temp_directory_path() / ("msgx-capture-it-" + std::to_string(::getpid()) + "-" + name);
    fs::remove_all(dir_);
    options_.max_commit_delay = minutes(5);
    Open();
  }
  void TearDown() override {
    capture_.reset();
    log_.reset();
    fs::remove_all(dir_);
  }

  void Open() {
    mailbox_ = std::make_unique<PgMailbox>(url_, "cminmsgs", MailboxColumns{});
    auto l = LogStore::Open((dir_ / "log").string(), &clock_);
    ASSERT_TRUE(l.ok()) << l.status().ToString();
    log_ = std::move(l).value();
    auto c = Capture::Create(log_.get(), mailbox_.get(), &clock_, options_);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    capture_ = std::move(c).value();
  }
  // kill -9: no shutdown path, just gone; then start again.
  void Crash() {
    capture_.reset();
    log_.reset();
    mailbox_.reset();
    Open();
  }

  std::int64_t Committed(const std::string& body = "<MSG/>") {
    pqxx::connection c(url_);
    pqxx::work tx(c);
    std::int64_t id = Insert(tx, body);
    tx.commit();
    return id;
  }

  // The own database, migrated by the real migrations (msgx_command is V1's).
  std::string OwnDatabase(const std::string& name) {
    server_->CreateDatabase(name);
    auto r = Migrator(MSGX_SOURCE_DIR "/migrations").Migrate(server_->Url(name));
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return name;
  }

  PollOutcome Poll() {
    auto r = capture_->Poll();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : PollOutcome{};
  }

  // Mailbox ids in log order; late ones negated.
  Ids LogIds() {
    Ids ids;
    for (auto it = log_->NewIterator(0); it->Valid(); it->Next()) {
      if (it->record()->kind() != fb::RecordKind::MAILBOX_MESSAGE) continue;
      ids.push_back(it->record()->late() ? -it->record()->mailbox_id()
                                         : it->record()->mailbox_id());
    }
    return ids;
  }

  static testing::PgServer* server_;
  std::string db_;
  std::string url_;
  fs::path dir_;
  ManualClock clock_{1'764'460'000'000'000};
  CaptureOptions options_;
  std::unique_ptr<PgMailbox> mailbox_;
  std::unique_ptr<LogStore> log_;
  std::unique_ptr<Capture> capture_;
};
testing::PgServer* CaptureIntegrationTest::server_ = nullptr;

TEST_F(CaptureIntegrationTest, CapturesRawTextAndReceivedTime) {
  const std::string body =
      "<?xml version=\"1.0\" encoding=\"GBK\"?><MSG><META><TYPE>FLOP</TYPE>"
      "</META>\xE4\xB8\xAD\xE6\x96\x87 </MSG>";
  std::int64_t id = Committed(body);
  PollOutcome out = Poll();
  EXPECT_EQ(out.appended, 1);
  std::vector<LogEntry> e;
  ASSERT_TRUE(log_->Read(0, 10, &e).ok());
  ASSERT_EQ(e.size(), 1u);
  auto rec = ToLogRecordData(e[0].bytes);
  ASSERT_TRUE(rec.ok());
  EXPECT_EQ(rec->mailbox_id, id);
  EXPECT_EQ(rec->raw, body);
  // 2026-11-30 10:11:12.345678 read as a wall-clock reading.
  EXPECT_EQ(rec->received_at, std::optional<MicrosSinceEpoch>(1'796'033'472'345'678));
}

// The server's clock, which bounds the host's in the log's append times
// (docs/fold.md#the-folds-clock): the same machine's, so within seconds.
TEST_F(CaptureIntegrationTest, ServerNowIsTheDatabasesClock) {
  auto now = mailbox_->ServerNow();
  ASSERT_TRUE(now.ok()) << now.status().ToString();
  EXPECT_LT(std::llabs(*now - SystemClock::Default()->NowMicros()), 5'000'000);
}

TEST_F(CaptureIntegrationTest, UncommittedLowerIdHoldsCaptureThenIsCapturedInOrder) {
  std::int64_t a = Committed();
  pqxx::connection holder(url_);
  pqxx::work held(holder);
  std::int64_t b = Insert(held, "<MSG>held</MSG>");
  std::int64_t c = Committed();
  ASSERT_EQ(b, a + 1);
  ASSERT_EQ(c, b + 1);

  PollOutcome first = Poll();
  EXPECT_EQ(first.appended, 1);
  EXPECT_EQ(first.waiting_at, std::optional<std::int64_t>(b));
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(b));
  EXPECT_EQ(LogIds(), (Ids{a}));

  held.commit();
  PollOutcome after = Poll();
  EXPECT_EQ(after.appended, 2);
  EXPECT_EQ(after.skipped_ids, 0);
  EXPECT_EQ(LogIds(), (Ids{a, b, c}));
}

TEST_F(CaptureIntegrationTest, RolledBackIdIsSkippedWithinOnePoll) {
  std::int64_t a = Committed();
  std::int64_t b = 0;
  {
    pqxx::connection conn(url_);
    pqxx::work tx(conn);
    b = Insert(tx, "<MSG>doomed</MSG>");
    std::int64_t c = Committed();
    ASSERT_EQ(c, b + 1);
    EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(b));
    tx.abort();
  }
  // One poll skips it, with no wait: the clock is manual and never reaches
  // capture.max-commit-delay, so the reason can only be the ended transactions.
  PollOutcome out = Poll();
  EXPECT_EQ(out.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{a, b + 1}));
  EXPECT_EQ(capture_->progress().skipped.at(b).reason, SkipReason::kTransactionsEnded);

  // A rollback that happened before capture ever saw the gap: same poll.
  {
    pqxx::connection conn(url_);
    pqxx::work tx(conn);
    Insert(tx, "<MSG>doomed too</MSG>");
    tx.abort();
  }
  std::int64_t e = Committed();
  PollOutcome again = Poll();
  EXPECT_EQ(again.skipped_ids, 1);
  EXPECT_EQ(again.appended, 1);
  EXPECT_EQ(LogIds().back(), e);
}

TEST_F(CaptureIntegrationTest, IdleTransactionElsewhereStallsNoLongerThanMaxCommitDelay) {
  // A session in another database holds a transaction id and does nothing.
  server_->CreateDatabase("idle_elsewhere");
  pqxx::connection idle(server_->Url("idle_elsewhere"));
  pqxx::work idle_tx(idle);
  idle_tx.exec("SELECT pg_current_xact_id()");

  std::int64_t a = Committed();
  pqxx::connection conn(url_);
  pqxx::work tx(conn);
  std::int64_t b = Insert(tx, "<MSG>rolled back</MSG>");
  std::int64_t c = Committed();
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(b));
  tx.abort();  // the id's holder is gone, but the idle one is still there

  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(b));
  clock_.Advance(minutes(4));
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(b));
  clock_.Advance(minutes(1));
  PollOutcome out = Poll();
  EXPECT_EQ(out.skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{a, c}));
  EXPECT_EQ(capture_->progress().skipped.at(b).reason, SkipReason::kCommitDelay);
  idle_tx.abort();
}

TEST_F(CaptureIntegrationTest, LateRowSurvivesACrashAndIsCaptured) {
  std::int64_t a = Committed();
  pqxx::connection conn(url_);
  pqxx::work slow(conn);
  std::int64_t b = Insert(slow, "<MSG>slow</MSG>");
  std::int64_t c = Committed();
  EXPECT_EQ(Poll().waiting_at, std::optional<std::int64_t>(b));
  clock_.Advance(minutes(5));  // the holder is still open: the delay gives up
  EXPECT_EQ(Poll().skipped_ids, 1);
  EXPECT_EQ(LogIds(), (Ids{a, c}));

  Crash();
  ASSERT_EQ(capture_->progress().skipped.count(b), 1u);
  EXPECT_EQ(capture_->progress().watermark, c);

  slow.commit();
  std::int64_t d = Committed();
  PollOutcome out = Poll();
  EXPECT_EQ(out.late, 1);
  EXPECT_EQ(out.appended, 1);
  EXPECT_EQ(LogIds(), (Ids{a, c, -b, d}));
  EXPECT_TRUE(capture_->progress().skipped.empty());
  EXPECT_EQ(capture_->progress().late_captured, 1);
  EXPECT_EQ(capture_->stats().late, 1);

  Crash();  // and never twice
  EXPECT_EQ(Poll().late, 0);
  EXPECT_EQ(LogIds(), (Ids{a, c, -b, d}));
}

TEST_F(CaptureIntegrationTest, StartAfterIdIsACutOverOnTheFirstStartOnly) {
  capture_.reset();
  log_.reset();
  fs::remove_all(dir_);
  for (int i = 0; i < 3; ++i) Committed();
  options_.start_after_id = 2;
  Open();
  Poll();
  EXPECT_EQ(LogIds(), (Ids{3}));
  options_.start_after_id = 0;
  Crash();
  std::int64_t d = Committed();
  Poll();
  EXPECT_EQ(LogIds(), (Ids{3, d}));
}

TEST_F(CaptureIntegrationTest, FullBatchesAskForMore) {
  options_.batch_max = 2;
  Crash();
  for (int i = 0; i < 5; ++i) Committed();
  int polls = 0;
  for (PollOutcome o = Poll(); o.more; o = Poll()) ++polls;
  EXPECT_EQ(polls, 2);
  EXPECT_EQ(LogIds(), (Ids{1, 2, 3, 4, 5}));
}

TEST_F(CaptureIntegrationTest, OutageIsAnInfraStatusAndChangesNothing) {
  Committed();
  auto bad = std::make_unique<PgMailbox>("postgresql://postgres@127.0.0.1:1/nope", "cminmsgs",
                                         MailboxColumns{});
  capture_.reset();
  auto c = Capture::Create(log_.get(), bad.get(), &clock_, options_);
  ASSERT_TRUE(c.ok());
  auto r = (*c)->Poll();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInfra);
  EXPECT_EQ(log_->next_offset(), 0u);
}

TEST_F(CaptureIntegrationTest, MailboxRestartIsAStallThenCaptureGoesOn) {
  std::int64_t a = Committed();
  Poll();
  server_->Stop();
  auto down = capture_->Poll();
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().error_class(), ErrorClass::kInfra);
  server_->Restart();
  std::int64_t b = Committed();
  // The broken connection is dropped on failure and re-opened on the next
  // poll; at most one more poll may still see the old socket.
  auto up = capture_->Poll();
  if (!up.ok()) up = capture_->Poll();
  ASSERT_TRUE(up.ok()) << up.status().ToString();
  EXPECT_EQ(LogIds(), (Ids{a, b}));
}

TEST_F(CaptureIntegrationTest, CommandIntakeAppendsInOrderAndNeverTwice) {
  const std::string own = OwnDatabase("own_" + db_.substr(3));
  server_->Psql(own,
                "INSERT INTO msgx_command (kind, args_json, requested_by) VALUES "
                "('REPLAY_MSG', '{\"mailbox_ids\": [7, 8]}', 'alice'),"
                "('REPLAY_MSG', '{\"mailbox_ids\": []}', 'bob'),"     // empty: rejected
                "('REPLAY_EVENT', '{\"event_ids\": [1]}', 'carol'),"  // not a log command
                "('IDENTITY_EXPIRY', '{\"before_micros\": 42}', 'msgx:jobs')");
  Committed();
  Poll();  // one mailbox record first: offset 0

  CommandIntake intake(server_->Url(own), log_.get());
  auto out = intake.Poll();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->appended, 2);
  EXPECT_EQ(out->rejected, 1);
  EXPECT_EQ(log_->next_offset(), 3u);
  EXPECT_EQ(server_->Psql(own,
                          "SELECT command_id, state, log_offset FROM msgx_command "
                          "ORDER BY command_id"),
            "1|APPENDED|1\n2|REJECTED|\n3|PENDING|\n4|APPENDED|2\n");
  EXPECT_NE(server_->Psql(own, "SELECT error FROM msgx_command WHERE command_id = 2"), "\n");

  std::vector<LogEntry> e;
  ASSERT_TRUE(log_->Read(1, 10, &e).ok());
  ASSERT_EQ(e.size(), 2u);
  auto replay = ToLogRecordData(e[0].bytes);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->command->command_id, 1);
  EXPECT_EQ(replay->command->issued_by, "alice");
  EXPECT_EQ(std::get<ReplayArgs>(replay->command->args).mailbox_ids, (Ids{7, 8}));
  EXPECT_NE(replay->command->issued_at, 0);

  // Crash between the append and the mark: the mark is lost, the log kept.
  server_->Psql(own,
                "UPDATE msgx_command SET state = 'PENDING', log_offset = NULL "
                "WHERE command_id = 4");
  capture_.reset();
  log_.reset();
  Open();
  CommandIntake after_crash(server_->Url(own), log_.get());
  out = after_crash.Poll();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->appended, 0);
  EXPECT_EQ(out->recovered, 1);
  EXPECT_EQ(log_->next_offset(), 3u);
  EXPECT_EQ(server_->Psql(own, "SELECT log_offset FROM msgx_command WHERE command_id = 4"), "2\n");

  server_->Psql(own,
                "INSERT INTO msgx_command (kind, args_json, requested_by) VALUES "
                "('HISTORY_SWEEP', '{\"cutoff_micros\": 5}', 'msgx:jobs')");
  out = after_crash.Poll();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ(out->appended, 1);
  EXPECT_EQ(log_->next_offset(), 4u);
  EXPECT_EQ(log_->last_command_id(), 5);
}

// Quarantine comes only from crash poison at start-up
// (docs/crash-safety.md#crash-poison): an operator's QUARANTINE row, however
// well-formed and even for an offset not yet folded, is REJECTED with an
// error that says so and never reaches the log; the row after it is
// appended as usual.
TEST_F(CaptureIntegrationTest, CommandIntakeRefusesQuarantine) {
  const std::string own = OwnDatabase("own_" + db_.substr(3, 40));
  server_->Psql(own,
                "INSERT INTO msgx_command (kind, args_json, requested_by) VALUES "
                "('QUARANTINE', '{\"offset\": 5, \"reason\": \"looks odd\"}', 'bob'),"
                "('REPLAY_MSG', '{\"mailbox_ids\": [7]}', 'alice')");
  CommandIntake intake(server_->Url(own), log_.get());
  auto out = intake.Poll();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->appended, 1);
  EXPECT_EQ(out->rejected, 1);
  EXPECT_EQ(log_->next_offset(), 1u);
  EXPECT_EQ(server_->Psql(own,
                          "SELECT command_id, state, log_offset FROM msgx_command "
                          "ORDER BY command_id"),
            "1|REJECTED|\n2|APPENDED|0\n");
  const std::string error =
      server_->Psql(own, "SELECT error FROM msgx_command WHERE command_id = 1");
  EXPECT_NE(error.find("QUARANTINE is not an operator command"), std::string::npos) << error;
  auto quarantine_offset = log_->CommandOffset(1);
  ASSERT_TRUE(quarantine_offset.ok());
  EXPECT_FALSE(quarantine_offset->has_value());

  std::vector<LogEntry> e;
  ASSERT_TRUE(log_->Read(0, 10, &e).ok());
  ASSERT_EQ(e.size(), 1u);
  auto replay = ToLogRecordData(e[0].bytes);
  ASSERT_TRUE(replay.ok());
  EXPECT_EQ(replay->command->command_id, 2);

  out = intake.Poll();  // refused once, for good
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->appended + out->rejected + out->recovered, 0);
  EXPECT_EQ(log_->next_offset(), 1u);
}

TEST_F(CaptureIntegrationTest, CommandIntakeFailingBetweenAppendAndMarkAppendsOnce) {
  const std::string own = OwnDatabase("own_" + db_.substr(3, 40));
  // The mark fails after the append (as a crash or an outage there would).
  server_->Psql(own, R"sql(
    CREATE FUNCTION refuse_mark() RETURNS trigger LANGUAGE plpgsql AS
      $$ BEGIN RAISE EXCEPTION 'mark refused'; END $$;
    CREATE TRIGGER refuse_mark BEFORE UPDATE ON msgx_command
      FOR EACH ROW EXECUTE FUNCTION refuse_mark();
    INSERT INTO msgx_command (kind, args_json, requested_by) VALUES
      ('REPLAY_MSG', '{"mailbox_ids": [1]}', 'alice'),
      ('REPLAY_MSG', '{"mailbox_ids": [2]}', 'alice');
  )sql");
  {
    CommandIntake intake(server_->Url(own), log_.get());
    auto out = intake.Poll();
    ASSERT_FALSE(out.ok());
    EXPECT_EQ(out.status().error_class(), ErrorClass::kInfra);
    EXPECT_EQ(log_->next_offset(), 2u);
  }
  EXPECT_EQ(server_->Psql(own, "SELECT count(*) FROM msgx_command WHERE state = 'PENDING'"), "2\n");

  // kill -9 and restart; the database accepts the mark again.
  Crash();
  server_->Psql(own, "DROP TRIGGER refuse_mark ON msgx_command");
  CommandIntake intake(server_->Url(own), log_.get());
  auto out = intake.Poll();
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->appended, 0);
  EXPECT_EQ(out->recovered, 2);
  EXPECT_EQ(log_->next_offset(), 2u);
  EXPECT_EQ(server_->Psql(own,
                          "SELECT command_id, state, log_offset FROM msgx_command "
                          "ORDER BY command_id"),
            "1|APPENDED|0\n2|APPENDED|1\n");
}

}  // namespace
}  // namespace msgx

namespace msgx {
namespace {

// mailbox.time-zone on PostgreSQL: a TIMESTAMP (without time zone) received
// column is a wall-clock reading in the zone, across a DST change, in two
// zones; a TIMESTAMPTZ column is an instant whatever the zone.
constexpr MicrosSinceEpoch kSecond = 1'000'000;

TEST_F(CaptureIntegrationTest, ATimestampIsReadInTheMailboxTimeZoneAcrossDst) {
  // Berlin leaves CET for CEST at 2026-03-29 02:00 local; New York leaves
  // EST for EDT at 2026-03-08 02:00 local.
  server_->Psql(db_,
                "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received) VALUES "
                "('<MSG/>', '2026-03-29 01:30:00'), ('<MSG/>', '2026-03-29 03:30:00.25'), "
                "('<MSG/>', '2026-03-08 01:30:00'), ('<MSG/>', '2026-03-08 03:30:00')");
  PgMailbox berlin(url_, "cminmsgs", MailboxColumns{}, "Europe/Berlin");
  auto b = testing::ReceivedById(berlin);
  EXPECT_EQ(b[1], 1'774'744'200 * kSecond);            // 2026-03-29T00:30:00Z
  EXPECT_EQ(b[2], 1'774'747'800 * kSecond + 250'000);  // 2026-03-29T01:30:00.25Z
  PgMailbox new_york(url_, "cminmsgs", MailboxColumns{}, "America/New_York");
  auto n = testing::ReceivedById(new_york);
  EXPECT_EQ(n[3], 1'772'951'400 * kSecond);  // 2026-03-08T06:30:00Z
  EXPECT_EQ(n[4], 1'772'955'000 * kSecond);  // 2026-03-08T07:30:00Z

  server_->Psql(db_,
                "CREATE TABLE tz_mailbox (cminmsgs_id BIGSERIAL PRIMARY KEY, cminmsgs_clob_msg "
                "TEXT NOT NULL, cminmsgs_date_received TIMESTAMPTZ);"
                "INSERT INTO tz_mailbox (cminmsgs_clob_msg, cminmsgs_date_received) VALUES "
                "('<MSG/>', '2026-03-29 03:30:00+02')");
  PgMailbox tz(url_, "tz_mailbox", MailboxColumns{}, "America/New_York");
  EXPECT_EQ(testing::ReceivedById(tz)[1], 1'774'747'800 * kSecond);  // 2026-03-29T01:30:00Z
}

}  // namespace
}  // namespace msgx
