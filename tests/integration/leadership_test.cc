// The single-writer rule against a real PostgreSQL: state.dir lock aside,
// exactly one process leads; a successor takes over when the leader's
// connection dies; a stale epoch and a foreign log are refused.
#include <gtest/gtest.h>

#include "stream/pg_leadership.h"
#include "stream/pg_session.h"
#include "tests/support/fixtures.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

class LeadershipTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pg_ = testing::PgServer::Start().release(); }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }
  void SetUp() override {
    const std::string db = "lead_" + std::to_string(++n_);
    url_ = testing::CreateMigratedDatabase(pg_, db);
  }
  static testing::PgServer* pg_;
  static int n_;
  std::string url_;
};
testing::PgServer* LeadershipTest::pg_ = nullptr;
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
  rb = b.TryAcquire();
  ASSERT_TRUE(rb.ok()) << rb.status().ToString();
  EXPECT_TRUE(rb->leader);
  EXPECT_EQ(rb->epoch, 2);
}

TEST_F(LeadershipTest, AStaleEpochCannotCommit) {
  PgLeadership a(url_, "log-1");
  ASSERT_TRUE(a.TryAcquire().ok());
  const std::int64_t old_epoch = a.epoch();
  a.Release();
  PgLeadership b(url_, "log-1");
  ASSERT_TRUE(b.TryAcquire().ok());

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

TEST_F(LeadershipTest, AForeignLogIsRefused) {
  PgLeadership a(url_, "log-1");
  ASSERT_TRUE(a.TryAcquire().ok());
  a.Release();
  PgLeadership other(url_, "log-2");
  auto r = other.TryAcquire();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kConfig);
  EXPECT_NE(r.status().message().find("belongs to log log-1"), std::string::npos);
  EXPECT_FALSE(other.leader());
}

}  // namespace
}  // namespace msgx
