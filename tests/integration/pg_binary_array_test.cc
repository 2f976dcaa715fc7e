// PgBinaryArray (stream/pg/binary_array.h) read by a real PostgreSQL: every
// value comes back as it went in, the ones a text array literal would have
// to escape among them, and an array of the wrong element type is an error
// the server names (a bug, not an outage).
#include <gtest/gtest.h>

#include <limits>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <vector>

#include "stream/pg/binary_array.h"
#include "stream/pg/pg_session.h"
#include "stream/pg/prepared.h"
#include "tests/support/fixtures.h"
#include "tests/support/pg_suite.h"

namespace msgx {
namespace {

class PgBinaryArrayTest : public testing::PgSuite {
 protected:
  void SetUp() override { url_ = testing::CreateMigratedDatabase(pg_, "binary_array"); }

  // Runs `sql` with `a` as $1 and returns column 0 of each row, NULL as
  // nullopt.
  Result<std::vector<std::optional<std::string>>> Read(const std::string& sql, PgBinaryArray& a) {
    PgSession s(url_);
    std::vector<std::optional<std::string>> out;
    const std::string bytes = a.Take();
    Status st = s.RunStatement([&](pqxx::transaction_base& tx) {
      for (const auto& row :
           ExecPrepared(tx, sql, pqxx::binarystring(bytes.data(), bytes.size()))) {
        out.push_back(row[0].is_null() ? std::nullopt
                                       : std::optional<std::string>(row[0].as<std::string>()));
      }
    });
    if (!st.ok()) return st;
    return out;
  }

  std::string url_;
};

TEST_F(PgBinaryArrayTest, TextsComeBackByteForByte) {
  const std::vector<std::optional<std::string>> values = {
      "plain",
      R"({"k":"a \"quoted\" \\ value","l":[1,2]})",
      "NULL",
      std::nullopt,
      "",
      "comma, {brace} and \"quote\"",
      "line\nbreak\ttab\\",
      "Zürich 北京 ✈",
      std::string(100'000, 'x') + "\\\"",
  };
  PgBinaryArray a(PgElementType::kText);
  for (const auto& v : values) {
    if (v) {
      a.AddText(*v);
    } else {
      a.AddNull();
    }
  }
  auto got = Read("SELECT v FROM unnest($1::text[]) WITH ORDINALITY AS u (v, ord) ORDER BY ord", a);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, values);
}

TEST_F(PgBinaryArrayTest, IntegersAndTimesComeBackAsTheirValues) {
  PgBinaryArray i8(PgElementType::kInt8);
  i8.AddInt8(std::numeric_limits<std::int64_t>::min());
  i8.AddInt8(-1);
  i8.AddNull();
  i8.AddInt8(std::numeric_limits<std::int64_t>::max());
  auto got =
      Read("SELECT v::text FROM unnest($1::bigint[]) WITH ORDINALITY AS u (v, o) ORDER BY o", i8);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<std::optional<std::string>>{"-9223372036854775808", "-1",
                                                           std::nullopt, "9223372036854775807"}));

  PgBinaryArray i4(PgElementType::kInt4);
  i4.AddInt4(-7);
  i4.AddInt4(1 << 30);
  got = Read("SELECT v::text FROM unnest($1::int[]) WITH ORDINALITY AS u (v, o) ORDER BY o", i4);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<std::optional<std::string>>{"-7", "1073741824"}));

  // Instants as microseconds since the Unix epoch, and as UTC text: one
  // before 2000 (a negative count in the wire format), the Unix epoch, and
  // one with microseconds.
  PgBinaryArray t(PgElementType::kTimestampTz);
  t.AddTimestampTz(946'684'799'999'999);  // 1999-12-31T23:59:59.999999Z
  t.AddTimestampTz(0);
  t.AddTimestampTz(1'700'000'000'123'456);
  got = Read(
      "SELECT (extract(epoch FROM v) * 1000000)::bigint || ' ' || "
      "to_char(v AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') "
      "FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u (v, o) ORDER BY o",
      t);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<std::optional<std::string>>{
                      "946684799999999 1999-12-31 23:59:59.999999", "0 1970-01-01 00:00:00.000000",
                      "1700000000123456 2023-11-14 22:13:20.123456"}));

  PgBinaryArray empty(PgElementType::kText);
  got = Read("SELECT count(*)::text FROM unnest($1::text[])", empty);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, (std::vector<std::optional<std::string>>{"0"}));
}

TEST_F(PgBinaryArrayTest, AnArrayOfAnotherElementTypeIsABug) {
  PgBinaryArray i8(PgElementType::kInt8);
  i8.AddInt8(1);
  auto got = Read("SELECT v::text FROM unnest($1::int[]) AS u (v)", i8);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().error_class(), ErrorClass::kInternal) << got.status().ToString();
  EXPECT_NE(got.status().ToString().find("instead of expected 23 (integer)"), std::string::npos)
      << got.status().ToString();
}

}  // namespace
}  // namespace msgx
