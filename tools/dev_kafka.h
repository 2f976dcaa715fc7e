// DevKafka: the body of `msgx dev kafka`, a long-running foreground process
// that keeps librdkafka's mock cluster (a real Kafka-protocol broker on
// loopback) alive for local runs, since no Kafka package exists here
// (docs/testing.md#real-servers-in-tests).
//
// It creates `topics` (one partition each; the mock has no CreateTopics
// admin API, so they are created through rdkafka_mock), writes its pid to
// <dir>/kafka.pid and the bootstrap address ("127.0.0.1:port") to
// <dir>/kafka.bootstrap (atomically, by rename), prints the address, then
// waits for SIGTERM, SIGINT or SIGHUP. On the way out it removes both files
// if they are still its own. The mock keeps everything in memory: a restart
// starts empty, on a new port.
//
// Thread-safety: call once, from the main thread, before other threads
// exist (it blocks the signals it waits for, for every thread it creates).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace msgx::app {

Status RunDevKafka(const std::string& dir, const std::vector<std::string>& topics, int brokers);

}  // namespace msgx::app
