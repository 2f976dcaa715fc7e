// KafkaMock's broker going down and up while other threads spawn children
// (docs/testing.md#the-kafka-mock-and-spawned-children). Going down closes
// the broker's listener and binds its port again at once; a child forked in
// that moment held the old listener open, the bind failed and librdkafka
// aborted the whole test binary (seen once in CI, in
// PipelineTest.FaultsWhileTrafficFlowsLoseNothing, whose traffic thread runs
// psql every 250 ms).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "base/subprocess.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

using std::chrono::seconds;

int BrokerPort(const testing::KafkaMock& kafka) {
  const std::string bootstrap = kafka.Bootstrap();
  return std::stoi(bootstrap.substr(bootstrap.rfind(':') + 1));
}

TEST(KafkaMockTest, BrokerKeepsItsPortThroughDownAndUpWhileChildrenAreSpawned) {
  auto kafka = testing::KafkaMock::Start();
  const int port = BrokerPort(*kafka);
  std::atomic<bool> spawning{true};
  std::atomic<int> spawned{0};
  SpawnOptions truth;
  truth.argv = {"true"};
  // Forks back to back, reaped in fours, so that one is nearly always in
  // flight when the broker goes down.
  std::thread children([&] {
    while (spawning) {
      std::vector<pid_t> pids;
      for (int i = 0; i < 4; ++i) {
        Result<pid_t> pid = Spawn(truth);
        ASSERT_TRUE(pid.ok()) << pid.status().ToString();
        pids.push_back(*pid);
      }
      for (pid_t pid : pids) ASSERT_TRUE(WaitForExit(pid, seconds(10)).ok());
      spawned += 4;
    }
  });
  // A cycle takes the mock about 150 ms. Without NoSpawnInFlight, 50 of them
  // aborted 7 runs in 7 here, and 20 aborted 2 in 3.
  for (int i = 0; i < 30; ++i) {
    kafka->SetBrokerDown();
    kafka->SetBrokerUp();
  }
  kafka->SetBrokerDown();
  EXPECT_FALSE(LoopbackPortOpen(port)) << "a broker that is down refuses connections";
  kafka->SetBrokerUp();
  spawning = false;
  children.join();
  EXPECT_GT(spawned.load(), 0);
  EXPECT_TRUE(LoopbackPortOpen(port)) << "the broker is back on port " << port;
}

}  // namespace
}  // namespace msgx
