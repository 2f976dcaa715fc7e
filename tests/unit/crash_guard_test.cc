#include "stream/fold/crash_guard.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "base/failpoint.h"

namespace msgx {
namespace {

class CrashGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("msgx-deaths-" + std::to_string(::getpid()) + "-" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    std::filesystem::remove(path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }

  // Forks a child that installs the guard, marks `offset` (or none) and
  // dies by `sig`. Returns the child's wait status.
  int DieInChild(std::int64_t offset, int sig) {
    pid_t pid = ::fork();
    if (pid == 0) {
      if (!CrashGuard::Install(path_).ok()) _exit(3);
      if (offset >= 0) CrashGuard::SetCurrent(offset);
      ::raise(sig);
      _exit(4);  // not reached
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }

  // Like DieInChild, but `offset` is armed on the child's main thread (the
  // fold's) and another thread aborts, as a mirror, applier or librdkafka
  // thread would while the fold decides a slow record.
  int AbortOnAnotherThreadInChild(std::int64_t offset) {
    pid_t pid = ::fork();
    if (pid == 0) {
      if (!CrashGuard::Install(path_).ok()) _exit(3);
      CrashGuard::SetCurrent(offset);
      std::thread other([] { std::abort(); });
      other.join();
      _exit(4);  // not reached
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }

  std::string path_;
};

TEST_F(CrashGuardTest, FatalSignalRecordsTheOffsetAndStillKills) {
  int status = DieInChild(17, SIGABRT);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  status = DieInChild(17, SIGSEGV);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);

  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  ASSERT_EQ(deaths->size(), 1u);
  EXPECT_EQ(deaths->at(17).count, 2);
  EXPECT_EQ(deaths->at(17).last_signal, SIGSEGV);
}

TEST_F(CrashGuardTest, KillNineAndDeathsOutsideARecordAreNotRecorded) {
  int status = DieInChild(5, SIGKILL);
  ASSERT_TRUE(WIFSIGNALED(status));
  status = DieInChild(-1, SIGABRT);  // between records
  ASSERT_TRUE(WIFSIGNALED(status));
  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  EXPECT_TRUE(deaths->empty());
}

TEST_F(CrashGuardTest, OnlyADeathOnTheFoldThreadCounts) {
  int status = AbortOnAnotherThreadInChild(7);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);  // the process still dies
  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  EXPECT_TRUE(deaths->empty());

  status = DieInChild(7, SIGABRT);  // on the thread that armed the guard
  ASSERT_TRUE(WIFSIGNALED(status));
  deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  ASSERT_EQ(deaths->size(), 1u);
  EXPECT_EQ(deaths->at(7).count, 1);
}

TEST_F(CrashGuardTest, PruneDropsAppliedOffsetsAndTornLinesAreIgnored) {
  DieInChild(3, SIGABRT);
  DieInChild(9, SIGABRT);
  { std::ofstream(path_, std::ios::app) << "12"; }  // a torn write
  ASSERT_TRUE(CrashGuard::Prune(path_, 3).ok());
  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  ASSERT_EQ(deaths->size(), 1u);
  EXPECT_EQ(deaths->begin()->first, 9);
}

TEST(FailpointTest, ArmedAbortKillsTheChildOnlyForItsArgument) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("MSGX_TEST_FAILPOINTS", "fold.record:17:exit", 1);
    FailpointHit("fold.record", "16");  // not armed for 16
    FailpointHit("other", "17");
    FailpointHit("fold.record", "17");  // exits 86
    _exit(0);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 86);
}

}  // namespace
}  // namespace msgx
