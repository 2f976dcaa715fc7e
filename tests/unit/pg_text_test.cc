// The SQL text helpers of stream/pg: literals that go into a statement's
// text (PgTextLiteral) and the names of prepared statements (PreparedName).
#include <gtest/gtest.h>

#include "stream/pg/pg_session.h"
#include "stream/pg/prepared.h"

namespace msgx {
namespace {

TEST(PgTextTest, ALiteralDoublesItsQuotesAndKeepsBackslashes) {
  EXPECT_EQ(PgTextLiteral("KAFKA:msg"), "'KAFKA:msg'");
  EXPECT_EQ(PgTextLiteral("it's"), "'it''s'");
  EXPECT_EQ(PgTextLiteral("''"), "''''''");
  EXPECT_EQ(PgTextLiteral("a\\b"), "'a\\b'");
  EXPECT_EQ(PgTextLiteral(""), "''");
}

TEST(PgTextTest, APreparedNameFollowsTheTextOnly) {
  const std::string a = PreparedName("SELECT 1");
  EXPECT_EQ(a.size(), 5u + 16u);
  EXPECT_EQ(a.rfind("msgx_", 0), 0u) << a;
  EXPECT_EQ(a, PreparedName("SELECT 1"));
  EXPECT_NE(a, PreparedName("SELECT 2"));
  EXPECT_NE(a, PreparedName("SELECT 1 "));
  // FNV-1a of the empty text is its offset basis.
  EXPECT_EQ(PreparedName(""), "msgx_cbf29ce484222325");
}

}  // namespace
}  // namespace msgx
