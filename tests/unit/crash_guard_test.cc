#include "stream/fold/crash_guard.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "base/failpoint.h"
#include "base/fatal_report.h"
#include "base/thread_name.h"

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

  // Forks a child whose stderr (its crash report) goes to `report`, which
  // installs the guard and runs `die` (which must not return). Returns the
  // child's wait status.
  int InChild(const std::function<void()>& die, const std::string& report = "/dev/null") {
    pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(report.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd < 0) _exit(5);
      ::dup2(fd, STDERR_FILENO);
      if (!CrashGuard::Install(path_).ok()) _exit(3);
      die();
      _exit(4);  // not reached
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return status;
  }

  // A child that marks `offset` (or none), with `sub` (a replay's message)
  // when >= 0, and dies by `sig`.
  int DieInChild(std::int64_t offset, int sig, int sub = -1) {
    return InChild([&] {
      if (offset >= 0) CrashGuard::SetCurrent(offset, sub);
      ::raise(sig);
    });
  }

  // `offset` is armed on the child's main thread (the fold's) and another
  // thread aborts, as a mirror, applier or librdkafka thread would while
  // the fold decides a slow record.
  int AbortOnAnotherThreadInChild(std::int64_t offset) {
    return InChild([&] {
      CrashGuard::SetCurrent(offset);
      std::thread other([] { std::abort(); });
      other.join();
    });
  }

  // On a thread named `thread_name`, a write through a pointer to address
  // 16 (`fault`) or an abort; the crash report goes to `report`.
  int CrashOnNamedThreadInChild(const std::string& thread_name, bool fault,
                                const std::string& report) {
    return InChild(
        [&] {
          std::thread crashy([&] {
            SetCurrentThreadName(thread_name);
            if (fault) {
              // Through a volatile, so that the compiler cannot see the address.
              volatile std::uintptr_t where = 16;
              auto* bad =
                  reinterpret_cast<volatile int*>(where);  // NOLINT(performance-no-int-to-ptr)
              *bad = 1;
            }
            std::abort();
          });
          crashy.join();
        },
        report);
  }

  // On a thread that prepared its signal stack, `offset` armed and the
  // stack overflowed; the crash report goes to `report`.
  int OverflowTheStackInChild(std::int64_t offset, const std::string& report) {
    return InChild(
        [&] {
          std::thread deep([&] {
            PrepareThreadForFatalReport();
            CrashGuard::SetCurrent(offset);
            volatile int from = 1;
            _exit(Recurse(from) == 0 ? 4 : 5);  // not reached
          });
          deep.join();
        },
        report);
  }

  // Recurses until the stack overflows (n never reaches 0 from 1), with a
  // frame the compiler cannot fold into a loop.
  static int Recurse(int n) {
    volatile char frame[512];
    frame[0] = static_cast<char>(n);
    if (n <= 0) return frame[0];
    return Recurse(n + 1) + frame[0];
  }

  // The whole of the file at `path` ("" when there is none).
  static std::string ReadWhole(const std::string& path) {
    std::ifstream in(path);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  }

  // The deaths file's lines.
  std::vector<std::string> ReadLines() const {
    std::vector<std::string> lines;
    std::ifstream in(path_);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    return lines;
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
  EXPECT_EQ(deaths->at({17, -1}).count, 2);
  EXPECT_EQ(deaths->at({17, -1}).last_signal, SIGSEGV);
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
  EXPECT_EQ(deaths->at({7, -1}).count, 1);
}

// Every fatal signal, on any thread and whether or not a record is armed,
// leaves a report on stderr: the signal, the faulting address, the thread's
// name and a backtrace with frames in this binary (docs/operations.md#a-crash-report).
TEST_F(CrashGuardTest, AFatalSignalOnAnyThreadWritesAReportWithABacktrace) {
  const std::string report = path_ + ".report";
  int status = CrashOnNamedThreadInChild("msgx:crash-test-thread", true, report);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);  // still dies of the fault
  std::string text = ReadWhole(report);
  EXPECT_NE(text.find("msgx: fatal signal " + std::to_string(SIGSEGV) +
                      " (SIGSEGV) at address 0x10 on thread \"msgx:crash-test\" (tid "),
            std::string::npos)
      << text;
  // A frame in this binary (named by the path it was started as), then
  // the end line.
  const std::string self =
      std::filesystem::read_symlink("/proc/self/exe").filename().string() + "(+0x";
  const std::size_t frame = text.find(self);
  EXPECT_NE(frame, std::string::npos) << text;
  EXPECT_NE(text.find("msgx: end of the backtrace\n", frame), std::string::npos) << text;

  // abort() carries no address. (The name above was cut to 15 bytes.)
  status = CrashOnNamedThreadInChild("msgx:applier", false, report);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGABRT);
  text = ReadWhole(report);
  EXPECT_NE(text.find("msgx: fatal signal " + std::to_string(SIGABRT) +
                      " (SIGABRT) on thread \"msgx:applier\" (tid "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("msgx: end of the backtrace\n"), std::string::npos) << text;
  std::filesystem::remove(report);
}

// A stack overflow on a thread with its own signal stack is recorded
// against the armed record and reported; without that stack no handler can
// run, and the death would go unrecorded (docs/operations.md#a-crash-report).
TEST_F(CrashGuardTest, AStackOverflowIsRecordedAndReported) {
  const std::string report = path_ + ".report";
  int status = OverflowTheStackInChild(23, report);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  ASSERT_EQ(deaths->size(), 1u);
  EXPECT_EQ(deaths->at({23, -1}).last_signal, SIGSEGV);
  std::string text = ReadWhole(report);
  EXPECT_NE(text.find("msgx: fatal signal " + std::to_string(SIGSEGV) + " (SIGSEGV) at address "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("msgx: end of the backtrace\n"), std::string::npos) << text;
  std::filesystem::remove(report);
}

TEST_F(CrashGuardTest, PruneDropsAppliedOffsetsAndTornLinesAreIgnored) {
  DieInChild(3, SIGABRT);
  DieInChild(9, SIGABRT);
  { std::ofstream(path_, std::ios::app) << "12"; }  // a torn write
  ASSERT_TRUE(CrashGuard::Prune(path_, 3).ok());
  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  ASSERT_EQ(deaths->size(), 1u);
  EXPECT_EQ(deaths->begin()->first, (DeathKey{9, -1}));
}

// While the fold decides the k-th message of a replay it arms (offset, k):
// the death is that message's, written "<offset>/<k> <signal>", and read
// back apart from the whole record's deaths at the same offset.
TEST_F(CrashGuardTest, ADeathInAReplayedMessageIsRecordedWithItsSub) {
  DieInChild(12, SIGABRT, 1);
  DieInChild(12, SIGSEGV, 1);
  DieInChild(12, SIGABRT, 0);
  DieInChild(12, SIGABRT);  // the replay command itself, between messages
  auto text = ReadLines();
  ASSERT_EQ(text.size(), 4u);
  EXPECT_EQ(text[0], "12/1 " + std::to_string(SIGABRT));
  EXPECT_EQ(text[3], "12 " + std::to_string(SIGABRT));

  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  ASSERT_EQ(deaths->size(), 3u);
  EXPECT_EQ(deaths->at({12, 1}).count, 2);
  EXPECT_EQ(deaths->at({12, 1}).last_signal, SIGSEGV);
  EXPECT_EQ(deaths->at({12, 0}).count, 1);
  EXPECT_EQ(deaths->at({12, -1}).count, 1);
  EXPECT_EQ(deaths->begin()->first, (DeathKey{12, -1}));  // ordered: the record first
}

// Lines written before subs existed ("<offset> <signal>") read as sub -1;
// a torn sub is ignored like any torn line.
TEST_F(CrashGuardTest, OldLinesReadAsTheWholeRecord) {
  { std::ofstream(path_) << "5 6\n5 11\n8/2 6\n8/ 6\n8/x 6\n9/3\n"; }
  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  ASSERT_EQ(deaths->size(), 2u);
  EXPECT_EQ(deaths->at({5, -1}).count, 2);
  EXPECT_EQ(deaths->at({5, -1}).last_signal, 11);
  EXPECT_EQ(deaths->at({8, 2}).count, 1);
}

TEST_F(CrashGuardTest, PruneKeepsSubs) {
  DieInChild(3, SIGABRT, 0);
  DieInChild(9, SIGABRT, 2);
  DieInChild(9, SIGABRT, 2);
  DieInChild(9, SIGABRT);
  ASSERT_TRUE(CrashGuard::Prune(path_, 3).ok());
  EXPECT_EQ(ReadLines(), (std::vector<std::string>{"9 " + std::to_string(SIGABRT),
                                                   "9/2 " + std::to_string(SIGABRT),
                                                   "9/2 " + std::to_string(SIGABRT)}));
  auto deaths = CrashGuard::ReadDeaths(path_);
  ASSERT_TRUE(deaths.ok());
  ASSERT_EQ(deaths->size(), 2u);
  EXPECT_EQ(deaths->at({9, 2}).count, 2);
  EXPECT_EQ(deaths->at({9, -1}).count, 1);
}

TEST(FailpointTest, ArmedAbortKillsTheChildOnlyForItsArgument) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("MSGX_TEST_FAILPOINTS", "fold.record:17:exit", 1);
    FailpointsReloadForTesting();       // an earlier test in this binary may have read it
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
