// The MariaDB/MySQL mailbox's error classes (stream/mariadb/mariadb_errors.h).
#include "stream/mariadb/mariadb_errors.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

TEST(MariaDbErrors, EveryFailureIsAnOutageNamedByItsClass) {
  struct Case {
    unsigned int code;
    std::string_view cls;
  };
  for (const Case& c :
       {Case{2006, "connection"}, Case{2013, "connection"}, Case{2002, "connection"},
        Case{2003, "connection"}, Case{2026, "connection"}, Case{1927, "connection"},
        Case{1053, "connection"}, Case{1040, "connection"}, Case{1205, "lock"},
        Case{1213, "lock"},       Case{3572, "lock"},       Case{1290, "read-only"},
        Case{1792, "read-only"},  Case{1836, "read-only"},  Case{1045, "privileges"},
        Case{1142, "privileges"}, Case{1143, "privileges"}, Case{1227, "privileges"},
        Case{1146, "schema"},     Case{1054, "schema"},     Case{1049, "schema"},
        Case{1969, "timeout"},    Case{3024, "timeout"},    Case{1064, "server"}}) {
    EXPECT_EQ(MariaDbErrorClass(c.code), c.cls) << c.code;
    Status s = ClassifyMariaDbError("read", c.code, "the server's words");
    EXPECT_EQ(s.error_class(), ErrorClass::kInfra) << c.code;
    EXPECT_EQ(s.message(), "mailbox read: " + std::string(c.cls) + " (" + std::to_string(c.code) +
                               "): the server's words");
  }
}

TEST(MariaDbErrors, OnlyNowaitRefusalsMeanAHeldRow) {
  EXPECT_TRUE(IsLockRefused(1205));
  EXPECT_TRUE(IsLockRefused(3572));
  EXPECT_FALSE(IsLockRefused(1213));
  EXPECT_FALSE(IsLockRefused(2013));
  EXPECT_FALSE(IsLockRefused(0));
}

}  // namespace
}  // namespace msgx
