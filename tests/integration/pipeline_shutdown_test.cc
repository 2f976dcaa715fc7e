// Stopping `msgx run` (docs/operations.md#stopping): SIGTERM under load
// delivers everything captured and exits 0, and a drain held by a broker
// that is down ends at its bound and the next start delivers the rest.
#include <gtest/gtest.h>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "base/clock.h"
#include "base/subprocess.h"
#include "state/log_store.h"
#include "tests/support/kafka_check.h"
#include "tests/support/pipeline_check.h"
#include "tests/support/pipeline_fixture.h"

namespace msgx {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::GetSoon;
using testing::PipelineTest;
using testing::ReadyzOnceItSays;

// The graceful drain (docs/operations.md#stopping): SIGTERM while rows
// arrive. Capture stops; what it captured is folded, applied to PostgreSQL,
// mirrored to Redis and sent to Kafka (each event once) before msgx exits 0;
// the next start captures the rest and everything is exact.
TEST_F(PipelineTest, SigtermUnderLoadDeliversEverythingCapturedAndExitsZero) {
  LoadMailbox(0);
  Consumers consumers;
  StartConsumers(&consumers, seconds(300));
  const pid_t pid = StartMsgx({"MSGX_SHUTDOWN_DRAIN_TIMEOUT=60s", "MSGX_LOG_LEVEL=info"});
  std::atomic<bool> more{true};
  std::thread rows_flowing([&] {
    for (int i = 0; more; ++i) {
      AddGenerated(200, 700'000 + 200 * i);
      std::this_thread::sleep_for(milliseconds(100));
    }
  });
  // Delivery is under way before the signal.
  for (int i = 0;
       i < 600 && OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'SENT'") < 100;
       ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  const std::int64_t outcomes_at_signal = OwnCount("SELECT count(*) FROM proc_state");
  ASSERT_EQ(::kill(pid, SIGTERM), 0);
  auto exited = WaitForExit(pid, seconds(75));  // the 60 s bound, and the last steps
  more = false;
  rows_flowing.join();
  ASSERT_TRUE(exited.ok()) << Log();
  EXPECT_EQ(exited->code, 0) << Log();
  EXPECT_TRUE(LogHas("drained in")) << Log();
  std::this_thread::sleep_for(seconds(2));  // let the consumers read the last events
  consumers.Finish();

  // The fold reached the log's end, so every row not folded was never captured.
  {
    auto log = LogStore::Open(state_dir_ + "/log", SystemClock::Default());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    EXPECT_EQ(FoldedOffset(), static_cast<std::int64_t>((*log)->next_offset()) - 1);
  }
  testing::PipelineCheckInput in = CheckInput();
  in.captured_only = true;
  const auto check = testing::CheckPipeline(in);
  for (const auto& p : check.problems) ADD_FAILURE() << p;
  const std::int64_t rows = MailboxRows();
  std::printf("drain: %lld outcomes at SIGTERM, %lld at exit, %lld rows not captured\n",
              static_cast<long long>(outcomes_at_signal), static_cast<long long>(check.outcomes),
              static_cast<long long>(check.unfolded));
  EXPECT_EQ(check.outcomes + check.unfolded, rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state WHERE state <> 'SENT'"), 0);
  // Kafka holds every event, each once.
  for (const auto& [target, topic] : std::vector<std::pair<std::string, std::string>>{
           {"KAFKA:msg", topic_msg_}, {"KAFKA:ref", topic_ref_}}) {
    const auto& got = consumers.consumed[topic];
    std::set<std::string> ids;
    for (const auto& m : got) ids.insert(m.headers.at("msgx-event-id"));
    EXPECT_EQ(ids.size(), got.size()) << target << ": an event sent twice";
    EXPECT_EQ(static_cast<std::int64_t>(ids.size()),
              OwnCount("SELECT count(*) FROM msg_event_state WHERE target = '" + target + "'"))
        << target;
  }
  std::set<std::string> batches;
  for (const auto& m : consumers.consumed[topic_schd_])
    batches.insert(m.headers.at("msgx-event-id"));
  EXPECT_EQ(batches.size(), consumers.consumed[topic_schd_].size());
  EXPECT_EQ(
      static_cast<std::int64_t>(batches.size()),
      OwnCount("SELECT count(DISTINCT batch_id) FROM msg_event_state WHERE target = 'KAFKA:schd'"));

  // The next start captures the rest.
  const pid_t again = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(180))) << Log();
  StopMsgx(again);
  ExpectConsistent(rows);
}

// A drain held open by a stalled output (the broker down): /readyz answers
// 503 "draining" at once; the bound ends the drain, msgx exits 0 naming what
// it left; a second SIGTERM cuts a long drain short; a start with the
// broker back delivers the rest, nothing lost or twice.
TEST_F(PipelineTest, ADrainHeldByTheBrokerDownEndsAtTheBoundAndAStartDeliversTheRest) {
  LoadMailbox(0);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string listen = "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port);
  const pid_t first = StartMsgx({listen, "MSGX_SHUTDOWN_DRAIN_TIMEOUT=5s", "MSGX_LOG_LEVEL=info"});
  ASSERT_TRUE(WaitSettled(MailboxRows(), seconds(120))) << Log();
  kafka_->SetBrokerDown();
  AddGenerated(300, 900'000);
  const std::int64_t rows = MailboxRows();
  for (int i = 0; i < 600 && OwnCount("SELECT count(*) FROM proc_state") < rows; ++i) {
    std::this_thread::sleep_for(milliseconds(100));
  }
  ASSERT_EQ(OwnCount("SELECT count(*) FROM proc_state"), rows) << Log();
  ASSERT_GT(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'PENDING'"), 0);

  ASSERT_EQ(::kill(first, SIGTERM), 0);
  const auto [status, body] = ReadyzOnceItSays(*port, "draining", 50);
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("draining"), std::string::npos) << body;
  auto exited = WaitForExit(first, seconds(60));  // 5 s, and a step of at most a Kafka timeout
  ASSERT_TRUE(exited.ok()) << Log();
  EXPECT_EQ(exited->code, 0) << Log();
  EXPECT_TRUE(LogHas("the drain bound of 5000 ms passed")) << Log();
  EXPECT_TRUE(LogHas("dispatch KAFKA:msg undrained")) << Log();
  EXPECT_GT(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'PENDING'"), 0);

  // A long drain, cut short by a second signal.
  const pid_t second = StartMsgx({listen, "MSGX_SHUTDOWN_DRAIN_TIMEOUT=1h", "MSGX_LOG_LEVEL=info"});
  ASSERT_TRUE(GetSoon(*port, "/healthz", seconds(10))) << Log();
  ASSERT_EQ(ReadyzOnceItSays(*port, "dispatch KAFKA:msg stalled", 300).first, 503) << Log();
  ASSERT_EQ(::kill(second, SIGTERM), 0);
  EXPECT_EQ(ReadyzOnceItSays(*port, "draining", 50).first, 503);
  ASSERT_EQ(::kill(second, SIGTERM), 0);
  exited = WaitForExit(second, seconds(60));
  ASSERT_TRUE(exited.ok()) << Log();
  EXPECT_EQ(exited->code, 0) << Log();
  EXPECT_TRUE(LogHas("stopped at once during the drain")) << Log();

  kafka_->SetBrokerUp();
  const pid_t third = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(180))) << Log();
  StopMsgx(third);
  ExpectConsistent(rows);
  EXPECT_EQ(OwnCount("SELECT count(*) FROM msg_event_state WHERE state = 'DEAD'"), 0);
  const auto want = OwnCount("SELECT count(*) FROM msg_event_state WHERE target = 'KAFKA:msg'");
  auto got = testing::ConsumeTopic(kafka_->Bootstrap(), topic_msg_, static_cast<size_t>(want),
                                   seconds(30));
  const std::set<std::string> ids = EventIdsInKeyOrder(got);
  EXPECT_EQ(static_cast<std::int64_t>(ids.size()), want);
}

}  // namespace
}  // namespace msgx
