// BenchBaseline: the same-run baseline of `msgx bench`
// (docs/performance.md#the-baseline): the way the systems msgx replaces
// work, one transaction per message, frozen here so every ramp is reported
// next to it.
//
// For each mailbox row, in id order, on its own:
//   1. read the row and decode it with the SIS codec (sis::SisDecoder);
//   2. in ONE PostgreSQL transaction of the own database, write its outcome
//      (bench_baseline_outcome) and its event, the canonical JSON of the
//      decoded message (bench_baseline_event);
//   3. send the event to kafka.topics.msg (idempotent producer, acks=all)
//      and wait for the broker's acknowledgement;
//   4. mark the mailbox row processed (date_processed = now, its own
//      transaction).
// Steps 1 and 4 go to whichever mailbox mailbox.url names, PostgreSQL or
// MariaDB (tools/bench_mailbox.h).
// Latency per message is step 1's start to step 4's commit. The two tables
// are created for the run and dropped after it; msgx never reads them.
// It runs while `msgx run` is stopped, so the two never share the CPU.
//
// Thread-safety: a function; call from one thread.
#pragma once

#include <cstdint>
#include <vector>

#include "base/config.h"
#include "base/result.h"

namespace msgx::app {

struct BaselineFigures {
  std::int64_t messages = 0;
  std::int64_t failed = 0;  // rows the codec refused (still counted, outcome DEAD)
  double seconds = 0;
  double msg_per_s = 0;
  double p50_ms = 0, p95_ms = 0, p99_ms = 0, max_ms = 0;
};

// kInfra on a database or broker failure, kConfig on a bad time zone.
Result<BaselineFigures> RunBaseline(const Config& config,
                                    const std::vector<std::int64_t>& mailbox_ids);

}  // namespace msgx::app
