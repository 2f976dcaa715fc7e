// The single-writer rule against a real PostgreSQL: state.dir lock aside,
// exactly one process leads; a successor takes over when the leader's
// connection dies; a stale epoch and a foreign log are refused.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <pqxx/pqxx>
#include <thread>

#include "base/stopper.h"
#include "stream/pg/leadership_keeper.h"
#include "stream/pg/outbox_delivery.h"
#include "stream/pg/pg_leadership.h"
#include "stream/pg/pg_session.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

// A successor retries, as `msgx run` does: PostgreSQL releases a closed
// session's advisory lock when its backend exits, a moment after the client
// has gone.
LeadershipAttempt AcquireWithin(PgLeadership& l, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    auto r = l.TryAcquire();
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    if (!r.ok() || r->leader || std::chrono::steady_clock::now() >= deadline) {
      return r.ok() ? *r : LeadershipAttempt{};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

class LeadershipTest : public testing::PgSuite {
 protected:
  void SetUp() override {
    const std::string db = "lead_" + std::to_string(++n_);
    url_ = testing::CreateMigratedDatabase(pg_, db);
  }
  static int n_;
  std::string url_;
};
int LeadershipTest::n_ = 0;

TEST_F(LeadershipTest, ExactlyOneLeadsAndASuccessorTakesOverWithANewEpoch) {
  PgLeadership a(url_, "log-1");
  PgLeadership b(url_, "log-1");
  auto ra = a.TryAcquire();
  ASSERT_TRUE(ra.ok()) << ra.status().ToString();
  EXPECT_TRUE(ra->leader);
  EXPECT_EQ(ra->epoch, 1);
  auto rb = b.TryAcquire();
  ASSERT_TRUE(rb.ok()) << rb.status().ToString();
  EXPECT_FALSE(rb->leader);
  EXPECT_NE(rb->holder.find("msgx run pid="), std::string::npos) << rb->holder;
  EXPECT_TRUE(a.CheckAlive().ok());

  a.Release();  // as when the leader's process dies and its session closes
  LeadershipAttempt next = AcquireWithin(b, std::chrono::seconds(10));
  EXPECT_TRUE(next.leader);
  EXPECT_EQ(next.epoch, 2);
}

TEST_F(LeadershipTest, AStaleEpochCannotCommit) {
  PgLeadership a(url_, "log-1");
  ASSERT_TRUE(a.TryAcquire().ok());
  const std::int64_t old_epoch = a.epoch();
  a.Release();
  PgLeadership b(url_, "log-1");
  ASSERT_TRUE(AcquireWithin(b, std::chrono::seconds(10)).leader);

  PgSession s(url_);
  Status stale = s.Run([&](pqxx::dbtransaction& tx) {
    Status e = CheckEpoch(tx, "main", old_epoch, "log-1");
    if (!e.ok()) throw std::runtime_error(e.message());
    tx.exec("UPDATE pipeline SET applied_offset = 99");
  });
  ASSERT_FALSE(stale.ok());
  EXPECT_NE(stale.message().find("stale epoch"), std::string::npos) << stale.message();
  EXPECT_EQ(pg_->Psql(url_.substr(url_.rfind('/') + 1), "SELECT applied_offset FROM pipeline"),
            "-1\n");

  Status current = s.Run([&](pqxx::dbtransaction& tx) {
    Status e = CheckEpoch(tx, "main", b.epoch(), "log-1");
    if (!e.ok()) throw std::runtime_error(e.message());
  });
  EXPECT_TRUE(current.ok()) << current.ToString();
}

// A delivered range recorded in one statement (RecordDeliveryFenced)
// carries its own fence: the current leader's lands once (a redo records
// nothing), a stale leader's and another log's land nothing, and a batch
// with replayed events takes the fenced transaction and marks their rows.
TEST_F(LeadershipTest, ADeliveryRecordedInOneStatementCarriesItsFence) {
  PgLeadership a(url_, "log-1");
  ASSERT_TRUE(a.TryAcquire().ok());
  PgSession s(url_);
  const std::string db = url_.substr(url_.rfind('/') + 1);
  const std::string at = PgTimestamp(1'764'000'000'000'000);
  auto record = [&](const DeliveryFence& fence, const Delivery& d) {
    return RecordDeliveryFenced(&s, fence, "KAFKA:msg", d, at);
  };
  auto ranges = [&] {
    return pg_->Psql(db,
                     "SELECT string_agg(first_event_id || '-' || last_event_id || ':' || events, "
                     "' ' ORDER BY last_event_id) FROM outbox_delivery");
  };
  Delivery first{1, 5, 5, {}};
  auto landed = record({"main", a.epoch(), "log-1"}, first);
  ASSERT_TRUE(landed.ok()) << landed.status().ToString();
  EXPECT_EQ(*landed, 5);
  auto redo = record({"main", a.epoch(), "log-1"}, first);
  ASSERT_TRUE(redo.ok()) << redo.status().ToString();
  EXPECT_EQ(*redo, 0);

  auto foreign = record({"main", a.epoch(), "log-2"}, {6, 7, 2, {}});
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().error_class(), ErrorClass::kConfig) << foreign.status().ToString();

  const std::int64_t old_epoch = a.epoch();
  a.Release();
  PgLeadership b(url_, "log-1");
  ASSERT_TRUE(AcquireWithin(b, std::chrono::seconds(10)).leader);
  auto stale = record({"main", old_epoch, "log-1"}, {6, 7, 2, {}});
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().error_class(), ErrorClass::kInfra);
  EXPECT_NE(stale.status().message().find("stale epoch"), std::string::npos)
      << stale.status().ToString();
  EXPECT_EQ(ranges(), "1-5:5\n");

  // Replayed events go row by row, in the fenced transaction.
  pg_->Psql(db,
            "INSERT INTO msg_event (event_key, target, event_type, state_version, payload_json, "
            "created_at, replayed_at) VALUES ('k', 'KAFKA:msg', 'UPSERT', 1, '{}', now(), now())");
  const auto replayed = std::stoll(pg_->Psql(db, "SELECT event_id FROM msg_event"));
  auto both = record({"main", b.epoch(), "log-1"}, {8, 9, 2, {replayed}});
  ASSERT_TRUE(both.ok()) << both.status().ToString();
  EXPECT_EQ(*both, 3);
  EXPECT_EQ(ranges(), "1-5:5 8-9:2\n");
  EXPECT_EQ(pg_->Psql(db, "SELECT state FROM msg_event"), "SENT\n");
}

// kLock fences a writer: the row lock gives the transaction an id (its
// commit is a write, flushed) and holds off a new epoch until it commits.
// kRead checks the same epoch with no lock: a read stays a read.
TEST_F(LeadershipTest, AReadChecksTheEpochWithoutBecomingAWrite) {
  PgLeadership a(url_, "log-1");
  ASSERT_TRUE(a.TryAcquire().ok());
  PgSession s(url_);
  auto xid_after = [&](EpochCheck how) {
    std::string xid;
    Status st = s.Run([&](pqxx::dbtransaction& tx) {
      Status e = CheckEpoch(tx, "main", a.epoch(), "log-1", how);
      if (!e.ok()) throw std::runtime_error(e.message());
      xid = tx.exec1("SELECT coalesce(txid_current_if_assigned()::text, 'none')")[0]
                .as<std::string>();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return xid;
  };
  EXPECT_EQ(xid_after(EpochCheck::kRead), "none");
  EXPECT_NE(xid_after(EpochCheck::kLock), "none");

  const std::int64_t old_epoch = a.epoch();
  a.Release();
  PgLeadership b(url_, "log-1");
  ASSERT_TRUE(AcquireWithin(b, std::chrono::seconds(10)).leader);
  Status stale = RunFenced(
      &s, "main", old_epoch, "log-1", [](pqxx::dbtransaction&) {}, EpochCheck::kRead);
  EXPECT_NE(stale.message().find("stale epoch"), std::string::npos) << stale.ToString();
}

// A fenced read of one statement (FencedReadSql): the rows in order from
// column 2 for the current epoch, one all-NULL row for none, and the
// fence's errors for a stale epoch, another log and a missing pipeline row.
TEST_F(LeadershipTest, AFencedReadOfOneStatementCarriesTheEpochWithItsRows) {
  PgLeadership a(url_, "log-1");
  ASSERT_TRUE(a.TryAcquire().ok());
  PgSession s(url_);
  // $1: the rows to read; $2: the pipeline.
  const std::string sql = FencedReadSql("SELECT n, 'x' || n FROM generate_series($1, 1, -1) n", 2);
  auto read = [&](int rows, const std::string& pipeline, std::int64_t epoch,
                  const std::string& log) -> Result<std::vector<std::string>> {
    std::vector<std::string> out;
    Status fence = Status::Ok();
    Status st = s.RunStatement([&](pqxx::transaction_base& tx) {
      const pqxx::result r = tx.exec_params(sql, rows, pipeline);
      fence = CheckFencedRead(r, pipeline, epoch, log);
      for (const auto& row : r) {
        if (!row[2].is_null()) out.push_back(row[2].as<std::string>() + row[3].as<std::string>());
      }
    });
    if (!st.ok()) return st;
    if (!fence.ok()) return fence;
    return out;
  };
  auto three = read(3, "main", a.epoch(), "log-1");
  ASSERT_TRUE(three.ok()) << three.status().ToString();
  EXPECT_EQ(*three, (std::vector<std::string>{"3x3", "2x2", "1x1"}))
      << "in the inner statement's order, not sorted again";
  auto none = read(0, "main", a.epoch(), "log-1");
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_TRUE(none->empty());

  auto stale = read(3, "main", a.epoch() - 1, "log-1");
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().error_class(), ErrorClass::kInfra);
  EXPECT_NE(stale.status().message().find("stale epoch"), std::string::npos);
  auto foreign = read(3, "main", a.epoch(), "log-2");
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().error_class(), ErrorClass::kConfig);
  auto missing = read(3, "other", a.epoch(), "log-1");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("no pipeline row 'other'"), std::string::npos);
}

// The fence's lock (kLock, FOR KEY SHARE) holds off a takeover until the
// fenced transaction ends, but not the leader's own progress: the
// applier's `UPDATE pipeline SET applied_offset` goes through at once.
TEST_F(LeadershipTest, TheFenceHoldsOffATakeoverButNotTheLeadersOwnProgress) {
  PgLeadership a(url_, "log-1");
  ASSERT_TRUE(a.TryAcquire().ok());
  const std::int64_t epoch = a.epoch();
  pqxx::connection fenced_conn(url_);
  pqxx::work fenced(fenced_conn);
  ASSERT_TRUE(CheckEpoch(fenced, "main", epoch, "log-1", EpochCheck::kLock).ok());

  {
    pqxx::connection c(url_);
    pqxx::work w(c);
    w.exec("SET LOCAL lock_timeout = '2s'");
    EXPECT_NO_THROW(w.exec_params(
        "UPDATE pipeline SET applied_offset = 5 WHERE name = 'main' AND leader_epoch = $1", epoch));
    w.commit();
  }

  a.Release();
  // The takeover must find the advisory lock free, so that only the fence can
  // hold it off: wait for a's backend to exit and let its lock go.
  pqxx::connection probe(url_);
  for (int i = 0; i < 200; ++i) {
    pqxx::nontransaction q(probe);
    const std::string sql =
        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND database = "
        "(SELECT oid FROM pg_database WHERE datname = current_database())";
    if (q.exec1(sql)[0].as<int>() == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  PgLeadership b(url_, "log-1");
  auto takeover = std::async(std::launch::async, [&] { return b.TryAcquire(); });
  EXPECT_EQ(takeover.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout)
      << "a new epoch was granted while a fenced transaction could still commit";
  fenced.commit();
  auto next = takeover.get();
  ASSERT_TRUE(next.ok()) << next.status().ToString();
  EXPECT_TRUE(next->leader);
  EXPECT_EQ(next->epoch, epoch + 1);
}

// A writer's refusal that names a stale epoch steps the keeper down at once
// (epoch 0, and waiting() says why); any other stall does not. Then it
// leads again, with a newer epoch, once it can.
TEST_F(LeadershipTest, TheKeeperStepsDownOnAStaleEpoch) {
  Stopper stopper;
  LeadershipKeeper keeper(url_, "log-1", &stopper, std::chrono::milliseconds(50));
  ASSERT_TRUE(keeper.TryFirst().ok());
  const std::int64_t first = keeper.epoch();
  ASSERT_GT(first, 0);
  std::thread run([&] { EXPECT_TRUE(keeper.Run().ok()); });
  keeper.StepDownIfStale("postgres: not connected");
  EXPECT_EQ(keeper.epoch(), first);
  keeper.StepDownIfStale("stale epoch 1 (current 2): another msgx leads now");
  const std::int64_t right_after = keeper.epoch();
  const std::string why = keeper.waiting();
  std::int64_t again = 0;
  for (int i = 0; i < 200 && again <= first; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    again = keeper.epoch();
  }
  stopper.Stop();
  run.join();
  EXPECT_EQ(right_after, 0);
  EXPECT_EQ(why.rfind("stepped down: stale epoch 1", 0), 0u) << why;
  EXPECT_GT(again, first);
}

TEST_F(LeadershipTest, AForeignLogIsRefused) {
  PgLeadership a(url_, "log-1");
  ASSERT_TRUE(a.TryAcquire().ok());
  a.Release();
  PgLeadership other(url_, "log-2");
  auto r = other.TryAcquire();
  for (int i = 0; i < 200 && r.ok() && !r->leader; ++i) {  // until a's lock is gone
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    r = other.TryAcquire();
  }
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kConfig);
  EXPECT_NE(r.status().message().find("belongs to log log-1"), std::string::npos);
  EXPECT_FALSE(other.leader());
}

}  // namespace
}  // namespace msgx
