// KafkaThreads: msgx's part in the threads librdkafka starts for a client
// (its main thread, one per broker, and others).
//
// librdkafka names its threads itself (rdk:main, rdk:broker1, ...), which is
// what top -H, perf and a crash report show (docs/operations.md#a-crash-report).
// What it cannot do is give them a signal stack: without one, a stack
// overflow on such a thread kills msgx with no handler run and so with no
// report. PrepareKafkaThreads adds an interceptor (librdkafka's on_new and
// on_thread_start) to a client's configuration that calls
// PrepareThreadForFatalReport (base/fatal_report.h) first thing on each
// thread the client starts, as msgx's own threads do.
//
// Thread-safety: PrepareKafkaThreads on the thread that owns `conf`; the
// count from any thread.
#pragma once

#include <librdkafka/rdkafka.h>

#include <cstdint>

#include "base/status.h"

namespace msgx {

// Adds the interceptor to `conf`, before rd_kafka_new. REQUIRES: conf is
// not yet used by a client.
Status PrepareKafkaThreads(rd_kafka_conf_t* conf);

// How many librdkafka threads have started, in this process, with a signal
// stack in place (for tests and diagnostics).
std::int64_t KafkaThreadsWithSignalStack();

}  // namespace msgx
