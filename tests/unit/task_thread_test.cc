#include "base/task_thread.h"

#include <gtest/gtest.h>

#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/fatal_report.h"
#include "base/thread_name.h"

namespace msgx {
namespace {

std::string ThisThreadName() {
  char buf[kMaxThreadName + 1];
  return std::string(buf, CurrentThreadName(buf));
}

// Every task runs on the same named thread, not the caller's, in the order
// given; each future carries its task's result. The thread began as msgx's
// threads do: a stack overflow on it is reported (base/fatal_report.h).
TEST(TaskThreadTest, TasksRunInOrderOnOneNamedThread) {
  TaskThread worker("msgx-test-task");
  std::vector<int> order;  // touched only by the worker until the futures are in
  std::vector<std::future<std::thread::id>> ids;
  std::vector<std::future<std::string>> names;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(worker.Run([&order, i] {
      order.push_back(i);
      return std::this_thread::get_id();
    }));
    names.push_back(worker.Run([] { return ThisThreadName(); }));
  }
  const std::thread::id first = ids[0].get();
  EXPECT_NE(first, std::this_thread::get_id());
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_EQ(ids[i].get(), first);
  for (auto& n : names) EXPECT_EQ(n.get(), "msgx-test-task");
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
  EXPECT_TRUE(worker.Run([] { return ThreadHasSignalStack(); }).get());
}

TEST(TaskThreadTest, AnExceptionReachesTheFutureAndTheThreadGoesOn) {
  TaskThread worker("msgx-test-task");
  auto failed = worker.Run([]() -> int { throw std::runtime_error("boom"); });
  auto next = worker.Run([] { return 7; });
  EXPECT_THROW(failed.get(), std::runtime_error);
  EXPECT_EQ(next.get(), 7);
}

// The destructor runs what was given before it, then joins: a task queued
// behind a running one still runs, and its future stays valid.
TEST(TaskThreadTest, TheDestructorRunsTheTasksAlreadyGiven) {
  std::promise<void> gate;
  std::shared_future<void> opened = gate.get_future().share();
  bool second_ran = false;
  std::future<void> second;
  {
    TaskThread worker("msgx-test-task");
    worker.Run([opened] { opened.wait(); });
    second = worker.Run([&second_ran] { second_ran = true; });
    gate.set_value();
  }
  EXPECT_TRUE(second_ran);
  ASSERT_TRUE(second.valid());
  second.get();
}

}  // namespace
}  // namespace msgx
