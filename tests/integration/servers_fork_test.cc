// A forked child that dies (a death test) must not take the parent's test
// servers with it: the cleanup hooks act only in the process that started
// them.
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/support/servers.h"

namespace msgx::testing {
namespace {

TEST(ServersForkTest, DeathOfAForkedChildLeavesTheServersRunning) {
  ::testing::FLAGS_gtest_death_test_style = "fast";  // plain fork(), no re-exec
  auto pg = PgServer::Start();
  auto redis = RedisServer::Start();
  // abort() only: exit() in a child forked from this threaded binary runs
  // static destructors (RocksDB's thread pool) that wait forever on locks
  // held by threads the child does not have.
  EXPECT_DEATH(std::abort(), "");
  EXPECT_EQ(pg->Psql("postgres", "SELECT 1"), "1\n");
}

}  // namespace
}  // namespace msgx::testing
