// The stage runner with fake stages, a manual clock and a waiter that
// advances the clock instead of sleeping.
#include "stream/service/stage_runner.h"

#include <gtest/gtest.h>

#include <atomic>
#include <deque>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>

#include "base/log.h"
#include "base/thread_name.h"

namespace msgx {
namespace {

constexpr MicrosSinceEpoch kStart = 1'700'000'000'000'000;

// Jumps the clock to each deadline, unless a wake-up is pending; records
// every wait as its length in milliseconds (-1 for one ended by a wake-up).
class JumpingWaiter final : public StageWaiter {
 public:
  explicit JumpingWaiter(ManualClock* clock) : clock_(clock) {}
  bool WaitUntil(Stopper* wake, MicrosSinceEpoch deadline) override {
    if (on_wait) on_wait(static_cast<int>(waits.size()) + 1);
    if (wake->stopped()) return false;
    if (wake->TakeNotification()) {
      waits.push_back(-1);
    } else {
      const MicrosSinceEpoch left = deadline - clock_->NowMicros();
      waits.push_back(left / 1000);
      if (left > 0) clock_->Advance(std::chrono::microseconds(left));
    }
    return !wake->stopped();
  }
  std::vector<std::int64_t> waits;
  std::function<void(int)> on_wait;  // called with the wait's 1-based number

 private:
  ManualClock* clock_;
};

// Returns the scripted outcomes in order, then stops the service.
class ScriptedStage final : public Stage {
 public:
  ScriptedStage(std::deque<StepOutcome> script, Stopper* service,
                std::function<void()> during_step = {})
      : script_(std::move(script)), service_(service), during_step_(std::move(during_step)) {}
  StepOutcome Step() override {
    ++steps;
    if (during_step_) during_step_();
    if (script_.empty()) {
      service_->Stop();
      return StepOutcome::Idle();
    }
    StepOutcome r = script_.front();
    script_.pop_front();
    return r;
  }
  void Figures(StageFigures* out) const override { out->emplace_back("steps_seen", steps); }
  int steps = 0;

 private:
  std::deque<StepOutcome> script_;
  Stopper* service_;
  std::function<void()> during_step_;
};

class StageRunnerTest : public ::testing::Test {
 protected:
  StageRunnerTest() : clock_(kStart), waiter_(&clock_) {}

  // A runner on the manual clock; its stages wait on `waiter` (a real
  // one), or by default on the jumping waiter_.
  std::unique_ptr<StageRunner> MakeRunner(std::function<bool()> leading = {},
                                          StageWaiter* waiter = nullptr) {
    StageRunner::Options o;
    o.clock = &clock_;
    o.waiter = waiter != nullptr ? waiter : &waiter_;
    o.service = &service_;
    o.leading = std::move(leading);
    o.metrics = &metrics_;
    return std::make_unique<StageRunner>(o);
  }
  static StagePolicy IdleForAnHour() {
    StagePolicy p = Policy();
    p.idle_wait = Millis(3'600'000);
    return p;
  }
  static StagePolicy Policy() {
    StagePolicy p;
    p.idle_wait = Millis(1000);
    p.backoff = {Millis(100), Millis(200), Millis(400)};
    p.backoff_cap = Millis(500);
    return p;
  }
  static const StageHealth& Entry(const std::vector<StageHealth>& hs, const std::string& name) {
    for (const auto& h : hs) {
      if (h.name == name) return h;
    }
    static const StageHealth none;
    ADD_FAILURE() << "no health entry " << name;
    return none;
  }

  ManualClock clock_;
  JumpingWaiter waiter_;
  Stopper service_;
  Metrics metrics_;
};

TEST_F(StageRunnerTest, AnOutageBacksOffByTheStagesScheduleAndCountsOneStall) {
  auto runner = MakeRunner();
  auto stage = std::make_unique<ScriptedStage>(
      std::deque<StepOutcome>{StepOutcome::Stalled("db down"), StepOutcome::Stalled("db down"),
                              StepOutcome::Stalled("db down"), StepOutcome::Stalled("db down"),
                              StepOutcome::Stalled("db down"), StepOutcome::Progressed()},
      &service_);
  runner->Add("applier", std::move(stage), Policy(), true);
  runner->Run("applier");
  // 100, 200, 400, then doubling capped at 500; no wait after progress; the
  // last step (script empty) is idle and stops the service.
  EXPECT_EQ(waiter_.waits, (std::vector<std::int64_t>{100, 200, 400, 500, 500}));
  const StageHealth h = Entry(runner->Health(), "applier");
  EXPECT_EQ(h.stalls, 1);
  EXPECT_EQ(h.steps, 7);
  EXPECT_EQ(runner->ExitStatus(), 0);
  EXPECT_FALSE(runner->failed());
  EXPECT_NE(metrics_.Render().find("msgx_stage_stalls_total{stage=\"applier\"} 1"),
            std::string::npos)
      << metrics_.Render();
}

TEST_F(StageRunnerTest, StallHealthSaysWhyUntilTheStageResumes) {
  auto runner = MakeRunner();
  StageRunner* raw = runner.get();
  std::vector<StageHealth> seen;
  auto stage = std::make_unique<ScriptedStage>(
      std::deque<StepOutcome>{StepOutcome::Stalled("redis: connection refused"),
                              StepOutcome::Progressed()},
      &service_, [&] { seen.push_back(Entry(raw->Health(), "mirror")); });
  runner->Add("mirror", std::move(stage), Policy(), true);
  runner->Run("mirror");
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[0].state, StageState::kStarting);
  EXPECT_EQ(seen[1].state, StageState::kStalled);
  EXPECT_EQ(seen[1].reason, "redis: connection refused");
  EXPECT_EQ(seen[1].since_micros, kStart);
  EXPECT_EQ(seen[2].state, StageState::kRunning);
  EXPECT_EQ(seen[2].since_micros, kStart + 100'000);  // after the one backoff
  EXPECT_EQ(seen[2].figures, (StageFigures{{"steps_seen", 3}}));
}

TEST_F(StageRunnerTest, ABugStopsThatStageOnlyAndTheExitStatusIsOne) {
  auto runner = MakeRunner();
  int other_steps = 0;
  struct Counting final : Stage {
    explicit Counting(int* n) : n_(n) {}
    StepOutcome Step() override {
      ++*n_;
      return StepOutcome::Idle();
    }
    int* n_;
  };
  struct Failing final : Stage {
    StepOutcome Step() override { return StepOutcome::Failed("SQLSTATE 23505"); }
  };
  runner->Add("applier", std::make_unique<Failing>(), Policy(), true);
  runner->Add("capture", std::make_unique<Counting>(&other_steps), Policy(), true);
  runner->Run("applier");  // returns: the stage failed
  EXPECT_TRUE(runner->failed());
  EXPECT_EQ(runner->ExitStatus(), 1);
  EXPECT_FALSE(service_.stopped());  // the service goes on
  const auto health = runner->Health();
  EXPECT_EQ(Entry(health, "applier").state, StageState::kFailed);
  EXPECT_EQ(Entry(health, "applier").reason, "SQLSTATE 23505");
  EXPECT_EQ(Entry(health, "capture").state, StageState::kStarting);
  const auto problems = runner->Problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "applier failed: SQLSTATE 23505");
  EXPECT_EQ(other_steps, 0);
}

TEST_F(StageRunnerTest, AnExceptionOutOfAStepIsABug) {
  auto runner = MakeRunner();
  struct Throwing final : Stage {
    StepOutcome Step() override { throw std::runtime_error("boom"); }
  };
  runner->Add("fold", std::make_unique<Throwing>(), Policy(), true);
  runner->Run("fold");
  EXPECT_EQ(runner->ExitStatus(), 1);
  EXPECT_EQ(Entry(runner->Health(), "fold").reason, "exception: boom");
}

// Every bug-class stop logs the line docs/operations.md#logs promises, at
// error level, from the stage's component:
//   ALARM: <stage> stopped: <reason>
TEST_F(StageRunnerTest, EveryBugClassStopLogsTheAlarmLine) {
  struct Failing final : Stage {
    StepOutcome Step() override { return StepOutcome::Failed("digest mismatch at 7"); }
  };
  struct Throwing final : Stage {
    StepOutcome Step() override { throw std::runtime_error("boom"); }
  };
  struct ThrowingAnything final : Stage {
    StepOutcome Step() override { throw 7; }
  };
  const std::vector<std::pair<std::string, std::string>> want{{"applier", "digest mismatch at 7"},
                                                              {"fold", "exception: boom"},
                                                              {"mirror", "unknown exception"}};
  ASSERT_TRUE(InitLogging("info").ok());
  ::testing::internal::CaptureStderr();
  auto runner = MakeRunner();
  runner->Add("applier", std::make_unique<Failing>(), Policy(), true);
  runner->Add("fold", std::make_unique<Throwing>(), Policy(), true);
  runner->Add("mirror", std::make_unique<ThrowingAnything>(), Policy(), true);
  for (const auto& [stage, reason] : want) runner->Run(stage);
  const std::string log = ::testing::internal::GetCapturedStderr();
  for (const auto& [stage, reason] : want) {
    std::string line = "\"level\":\"error\",\"component\":\"";
    line += stage;
    line += "\",\"msg\":\"ALARM: ";
    line += stage;
    line += " stopped: ";
    line += reason;
    line += "\"}";
    EXPECT_NE(log.find(line), std::string::npos) << line << " not in\n" << log;
  }
  EXPECT_EQ(runner->ExitStatus(), 1);
}

TEST_F(StageRunnerTest, WaitUntilWakesAtThatTime) {
  auto runner = MakeRunner();
  std::vector<MicrosSinceEpoch> step_times;
  auto stage = std::make_unique<ScriptedStage>(
      std::deque<StepOutcome>{StepOutcome::WaitUntil(kStart + 7'250'000, "head backing off"),
                              StepOutcome::WaitUntil(kStart, "already due")},
      &service_, [&] { step_times.push_back(clock_.NowMicros()); });
  runner->Add("fold", std::move(stage), Policy(), true);
  runner->Run("fold");
  // Woken at exactly T; a time already past steps again without waiting.
  EXPECT_EQ(step_times,
            (std::vector<MicrosSinceEpoch>{kStart, kStart + 7'250'000, kStart + 7'250'000}));
  EXPECT_EQ(waiter_.waits, (std::vector<std::int64_t>{7250}));
}

TEST_F(StageRunnerTest, AWakeUpDuringAStepEndsTheNextWaitAtOnce) {
  auto runner = MakeRunner();
  StageRunner* raw = runner.get();
  int n = 0;
  auto stage = std::make_unique<ScriptedStage>(
      std::deque<StepOutcome>{StepOutcome::Idle(), StepOutcome::Idle()}, &service_, [&] {
        if (n++ == 0) raw->Wake("dispatch KAFKA:msg");  // only during the first step
      });
  runner->Add("dispatch KAFKA:msg", std::move(stage), Policy(), true);
  runner->Run("dispatch KAFKA:msg");
  // First idle wait ended by the wake-up (-1), the second waits idle_wait.
  EXPECT_EQ(waiter_.waits, (std::vector<std::int64_t>{-1, 1000}));
  runner->Wake("no such stage");  // ignored
}

TEST_F(StageRunnerTest, AStageThatNeedsLeadershipDoesNotStepWithoutIt) {
  bool leading = false;
  auto runner = MakeRunner([&] { return leading; });
  StageRunner* raw = runner.get();
  std::vector<std::string> problems_while_waiting;
  waiter_.on_wait = [&](int n) {
    if (n == 1) problems_while_waiting = raw->Problems();
    if (n == 3) leading = true;  // leadership arrives during the third wait
  };
  auto stage = std::make_unique<ScriptedStage>(std::deque<StepOutcome>{StepOutcome::Progressed()},
                                               &service_, [&] { EXPECT_TRUE(leading); });
  StagePolicy p = Policy();
  p.needs_leadership = true;
  runner->Add("dispatch KAFKA:ref", std::move(stage), p, true);
  runner->Run("dispatch KAFKA:ref");
  EXPECT_EQ(problems_while_waiting, (std::vector<std::string>{"dispatch KAFKA:ref: not leading"}));
  // Three idle waits without a step; then it progresses and goes idle (the
  // script's end stops the service), which is the fourth wait.
  EXPECT_EQ(waiter_.waits, (std::vector<std::int64_t>{1000, 1000, 1000}));
  const StageHealth h = Entry(runner->Health(), "dispatch KAFKA:ref");
  EXPECT_EQ(h.steps, 2);
  EXPECT_EQ(h.state, StageState::kStopped);
}

// Every stall of a stage that needs leadership reaches leader_stalled (the
// keeper steps down on a stale epoch); a stall of one that does not, never.
TEST_F(StageRunnerTest, StallsOfStagesThatNeedLeadershipAreReported) {
  std::vector<std::string> reported;
  // One runner per stage: each script's end stops its runner's service.
  auto run_one = [&](bool needs_leadership, std::deque<StepOutcome> script) {
    Stopper service;
    StageRunner::Options o;
    o.clock = &clock_;
    o.waiter = &waiter_;
    o.service = &service;
    o.metrics = &metrics_;
    o.leading = [] { return true; };
    o.leader_stalled = [&](std::string_view why) { reported.emplace_back(why); };
    StageRunner runner(o);
    StagePolicy p = Policy();
    p.needs_leadership = needs_leadership;
    runner.Add("stage", std::make_unique<ScriptedStage>(std::move(script), &service), p, true);
    runner.Run("stage");
  };
  run_one(false, {StepOutcome::Stalled("mailbox down")});
  EXPECT_TRUE(reported.empty());
  run_one(true, {StepOutcome::Stalled("stale epoch 3 (current 4)"), StepOutcome::Progressed(),
                 StepOutcome::Stalled("db down")});
  EXPECT_EQ(reported, (std::vector<std::string>{"stale epoch 3 (current 4)", "db down"}));
}

// Counts its steps; remembers the name of the thread it stepped on.
struct Counting final : Stage {
  explicit Counting(std::atomic<int>* n) : n_(n) {}
  StepOutcome Step() override {
    char buf[kMaxThreadName + 1];
    thread_name.assign(buf, CurrentThreadName(buf));  // read after the join
    ++*n_;
    return StepOutcome::Idle();
  }
  std::atomic<int>* n_;
  std::string thread_name;
};

TEST_F(StageRunnerTest, StagesRunOnTheirOwnThreadsUntilStopped) {
  std::atomic<int> steps{0};
  // A real waiter: with idle_wait 1 h the thread steps once and waits until
  // stopped, which must end its wait at once.
  SystemStageWaiter real(&clock_);
  auto runner = MakeRunner({}, &real);
  runner->Add("capture", std::make_unique<Counting>(&steps), IdleForAnHour());
  runner->Start();
  for (int i = 0; i < 10'000'000 && steps.load() == 0; ++i) std::this_thread::yield();
  service_.Stop();
  runner->Stop();  // joins
  EXPECT_EQ(steps.load(), 1);
  EXPECT_EQ(Entry(runner->Health(), "capture").state, StageState::kStopped);
}

// Each stage's thread is named by ThreadNameOf. (A stage may step once
// more while the service stops: the first to end wakes the others.)
TEST_F(StageRunnerTest, EachStagesThreadIsNamedAfterIt) {
  std::atomic<int> steps{0};
  SystemStageWaiter real(&clock_);
  auto runner = MakeRunner({}, &real);
  auto capture = std::make_unique<Counting>(&steps);
  auto dispatch = std::make_unique<Counting>(&steps);
  auto job = std::make_unique<Counting>(&steps);
  const Counting* names[] = {capture.get(), dispatch.get(), job.get()};
  runner->Add("capture", std::move(capture), IdleForAnHour());
  runner->Add("dispatch KAFKA:msg", std::move(dispatch), IdleForAnHour());
  runner->Add("job proc-state-hst-retention", std::move(job), IdleForAnHour());
  runner->Start();
  for (int i = 0; i < 10'000'000 && steps.load() < 3; ++i) std::this_thread::yield();
  service_.Stop();
  runner->Stop();  // joins
  EXPECT_EQ(names[0]->thread_name, "capture");
  EXPECT_EQ(names[1]->thread_name, "KAFKA:msg");
  EXPECT_EQ(names[2]->thread_name, "proc-state-hst-");  // cut to 15 bytes
}

// A stage that steps by a function (no script end, no service stop).
class FnStage final : public Stage {
 public:
  explicit FnStage(std::function<StepOutcome()> step) : step_(std::move(step)) {}
  StepOutcome Step() override {
    ++steps;
    return step_();
  }
  int steps = 0;

 private:
  std::function<StepOutcome()> step_;
};

class StageRunnerDrainTest : public StageRunnerTest {
 protected:
  // Adds a stage on the caller's thread; returns it to count its steps.
  FnStage* AddStage(StageRunner* runner, const std::string& name, int drain_order,
                    std::function<StepOutcome()> step, bool needs_leadership = false) {
    auto stage = std::make_unique<FnStage>(std::move(step));
    FnStage* raw = stage.get();
    StagePolicy p = Policy();
    p.drain_order = drain_order;
    p.needs_leadership = needs_leadership;
    runner->Add(name, std::move(stage), p, true);
    return raw;
  }
};

// Capture stops at once; the fold ends at its first idle step, the mirror
// (after it) at its own; nothing is left.
TEST_F(StageRunnerDrainTest, InputsStopAndEachOutputEndsAtItsFirstIdleStepAfterItsUpstream) {
  auto runner = MakeRunner();
  FnStage* capture =
      AddStage(runner.get(), "capture", kStopAtDrain, [] { return StepOutcome::Idle(); });
  std::deque<StepOutcome> fold_script{StepOutcome::Progressed(), StepOutcome::Progressed(),
                                      StepOutcome::Idle()};
  FnStage* fold = AddStage(runner.get(), "fold", 0, [&] {
    StepOutcome r = fold_script.front();
    fold_script.pop_front();
    return r;
  });
  FnStage* mirror = AddStage(runner.get(), "mirror", 1, [] { return StepOutcome::Idle(); });
  runner->BeginDrain(Millis(10'000));
  EXPECT_TRUE(runner->draining());
  EXPECT_FALSE(runner->AllEnded());
  runner->Run("capture");
  runner->Run("fold");
  runner->Run("mirror");
  EXPECT_EQ(capture->steps, 0);
  EXPECT_EQ(fold->steps, 3);
  EXPECT_EQ(mirror->steps, 1);
  EXPECT_TRUE(runner->AllEnded());
  EXPECT_TRUE(runner->Undrained().empty());
  const auto hs = runner->Health();
  EXPECT_EQ(Entry(hs, "capture").state, StageState::kStopped);
  EXPECT_EQ(Entry(hs, "fold").reason, "drained");
  EXPECT_EQ(Entry(hs, "mirror").reason, "drained");
  EXPECT_EQ(clock_.MonotonicMicros(), 0);  // nobody waited for the clock
  EXPECT_EQ(runner->ExitStatus(), 0);
}

// An idle step that began before the stage upstream ended may have missed
// what it wrote last: only the next one drains.
TEST_F(StageRunnerDrainTest, AnIdleStepThatBeganBeforeTheUpstreamEndedDoesNotDrain) {
  auto runner = MakeRunner();
  StageRunner* raw = runner.get();
  AddStage(runner.get(), "fold", 0, [] { return StepOutcome::Idle(); });
  bool first = true;
  FnStage* applier = AddStage(runner.get(), "applier", 1, [&] {
    if (first) {
      first = false;
      raw->Run("fold");  // the fold drains while this step runs
    }
    return StepOutcome::Idle();
  });
  runner->BeginDrain(Millis(10'000));
  runner->Run("applier");
  EXPECT_EQ(applier->steps, 2);
  EXPECT_TRUE(runner->Undrained().empty());
}

// A mirror stalled on Redis holds the drain only until the bound (on the
// injected clock): then it ends undrained, named with its reason.
TEST_F(StageRunnerDrainTest, AStalledOutputEndsUndrainedWhenTheBoundPasses) {
  auto runner = MakeRunner();
  AddStage(runner.get(), "fold", 0, [] { return StepOutcome::Idle(); });
  AddStage(runner.get(), "mirror", 1, [] { return StepOutcome::Stalled("redis down"); });
  runner->BeginDrain(Millis(10'000));
  runner->Run("fold");
  runner->Run("mirror");
  EXPECT_EQ(clock_.MonotonicMicros(), 10'000'000);  // the last wait was cut at the bound
  EXPECT_EQ(runner->Undrained(),
            (std::vector<std::string>{
                "mirror undrained (the drain bound passed, was stalled: redis down)"}));
  EXPECT_EQ(runner->ExitStatus(), 0);  // stopped, not failed: resumed at the next start
}

// A downstream stage whose upstream never ends never drains.
TEST_F(StageRunnerDrainTest, AnOutputWhoseUpstreamHasNotEndedWaitsForTheBound) {
  auto runner = MakeRunner();
  AddStage(runner.get(), "fold", 0, [] { return StepOutcome::Idle(); });
  FnStage* dispatch =
      AddStage(runner.get(), "dispatch KAFKA:msg", 2, [] { return StepOutcome::Idle(); });
  runner->BeginDrain(Millis(5'000));
  runner->Run("dispatch KAFKA:msg");  // the fold has not run
  EXPECT_GT(dispatch->steps, 1);
  EXPECT_EQ(clock_.MonotonicMicros(), 5'000'000);
  const auto left = runner->Undrained();
  ASSERT_EQ(left.size(), 2U);
  EXPECT_EQ(left[0], "fold (starting)");
  EXPECT_EQ(left[1], "dispatch KAFKA:msg undrained (the drain bound passed, was idle)");
}

TEST_F(StageRunnerDrainTest, AStageThatFailsDuringTheDrainStillMakesTheExitStatusOne) {
  auto runner = MakeRunner();
  AddStage(runner.get(), "fold", 0, [] { return StepOutcome::Failed("bug"); });
  FnStage* mirror = AddStage(runner.get(), "mirror", 1, [] { return StepOutcome::Idle(); });
  runner->BeginDrain(Millis(10'000));
  runner->Run("fold");
  runner->Run("mirror");  // the fold has ended (failed): the mirror drains what there is
  EXPECT_EQ(mirror->steps, 1);
  EXPECT_EQ(runner->Undrained(), (std::vector<std::string>{"fold (failed: bug)"}));
  EXPECT_EQ(runner->ExitStatus(), 1);
}

TEST_F(StageRunnerDrainTest, AStageThatDoesNotLeadEndsAtOnce) {
  auto runner = MakeRunner([] { return false; });
  FnStage* applier = AddStage(
      runner.get(), "applier", 1, [] { return StepOutcome::Idle(); }, true);
  runner->BeginDrain(Millis(10'000));
  runner->Run("applier");
  EXPECT_EQ(applier->steps, 0);
  EXPECT_TRUE(waiter_.waits.empty());
  EXPECT_EQ(runner->Undrained(),
            (std::vector<std::string>{"applier undrained (not leading, was starting)"}));
}

// A second signal stops the service during the drain: every stage ends
// after its step.
TEST_F(StageRunnerDrainTest, AStopDuringTheDrainEndsTheStagesAtOnce) {
  auto runner = MakeRunner();
  AddStage(runner.get(), "fold", 0, [] { return StepOutcome::Idle(); });
  FnStage* mirror = AddStage(runner.get(), "mirror", 1, [&] {
    service_.Stop();
    return StepOutcome::Stalled("redis down");
  });
  runner->BeginDrain(Millis(10'000));
  runner->Run("fold");
  runner->Run("mirror");
  EXPECT_EQ(mirror->steps, 1);
  EXPECT_EQ(clock_.MonotonicMicros(), 0);
  EXPECT_EQ(runner->Undrained(),
            (std::vector<std::string>{"mirror undrained (stopped, was stalled: redis down)"}));
}

// Stuck(limit) names a stage only while its step has run longer than limit.
TEST_F(StageRunnerTest, StuckNamesAStageLongInOneStep) {
  auto runner = MakeRunner();
  StageRunner* raw = runner.get();
  std::vector<std::string> at_3s_limit_2s;
  std::vector<std::string> at_3s_limit_5s;
  auto stage = std::make_unique<ScriptedStage>(std::deque<StepOutcome>{StepOutcome::Progressed()},
                                               &service_, [&] {
                                                 if (!at_3s_limit_2s.empty()) return;
                                                 clock_.Advance(std::chrono::seconds(3));
                                                 at_3s_limit_2s = raw->Stuck(Millis(2'000));
                                                 at_3s_limit_5s = raw->Stuck(Millis(5'000));
                                               });
  runner->Add("mirror", std::move(stage), Policy(), true);
  EXPECT_TRUE(runner->Stuck(Millis(0)).empty());  // not stepping
  runner->Run("mirror");
  EXPECT_EQ(at_3s_limit_2s, (std::vector<std::string>{"mirror"}));
  EXPECT_TRUE(at_3s_limit_5s.empty());
  EXPECT_TRUE(runner->Stuck(Millis(0)).empty());  // the step is over
}

}  // namespace
}  // namespace msgx
