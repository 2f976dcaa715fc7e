// Prepared statements of msgx's own database (stream/pg/prepared.h)
// against a real PostgreSQL: prepared once per connection, planned no more
// once PostgreSQL keeps a generic plan, and prepared again on the
// connection PgSession opens after an outage.
#include <gtest/gtest.h>

#include <pqxx/pqxx>

#include "stream/pg/pg_session.h"
#include "stream/pg/prepared.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"

namespace msgx {
namespace {

class PgPreparedTest : public testing::PgSuite {
 protected:
  void SetUp() override { url_ = testing::CreateMigratedDatabase(pg_, "prepared"); }
  std::string url_;
};

TEST_F(PgPreparedTest, AStatementIsPreparedOncePerConnectionAndAgainOnANewOne) {
  PgSession s(url_);
  const std::string sql = "SELECT $1::int + 1";
  auto run = [&](int v) -> Result<int> {
    int out = 0;
    Status st = s.RunStatement(
        [&](pqxx::transaction_base& tx) { out = ExecPrepared(tx, sql, v).at(0)[0].as<int>(); });
    if (!st.ok()) return st;
    return out;
  };
  // What this session's connection holds under the statement's name:
  // "<count> <generic plans>".
  auto held = [&]() -> std::string {
    std::string out;
    Status st = s.RunStatement([&](pqxx::transaction_base& tx) {
      const pqxx::row r = tx.exec_params1(
          "SELECT count(*), coalesce(sum(generic_plans), 0) FROM pg_prepared_statements "
          "WHERE name = $1",
          PreparedName(sql));
      out = r[0].as<std::string>() + " " + r[1].as<std::string>();
    });
    EXPECT_TRUE(st.ok()) << st.ToString();
    return out;
  };
  for (int i = 1; i <= 8; ++i) {
    auto r = run(i);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, i + 1);
  }
  // One statement, and after five runs with plans made for their values
  // PostgreSQL keeps the generic one: the last runs were not planned.
  EXPECT_EQ(held(), "1 3");

  // The backend goes away (an outage): the run after it fails as one, and
  // the next, on a new connection, prepares the statement again.
  std::int64_t pid = 0;
  ASSERT_TRUE(s.RunStatement([&](pqxx::transaction_base& tx) {
                 pid = tx.exec1("SELECT pg_backend_pid()")[0].as<std::int64_t>();
               }).ok());
  pqxx::connection admin(url_);
  pqxx::nontransaction(admin).exec_params("SELECT pg_terminate_backend($1)", pid);
  auto lost = run(1);
  ASSERT_FALSE(lost.ok());
  EXPECT_EQ(lost.status().error_class(), ErrorClass::kInfra) << lost.status().ToString();
  auto again = run(41);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(*again, 42);
  EXPECT_EQ(held(), "1 0");
}

}  // namespace
}  // namespace msgx
