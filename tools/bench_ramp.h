// RunBench: the body of `msgx bench` (docs/performance.md#msgx-bench).
//
//   1. `msgx migrate`, then the Kafka consumer (tools/bench_consumer.h) at
//      the end of the three topics, then `msgx run` as a child process with
//      the same configuration (file + environment; all jobs on), its output
//      in <out>/msgx.log;
//   2. setup: the SCHD ADD messages that create the bench's flights and one
//      block of traffic, waited for until delivered (the pipeline is up);
//   3. the ramp: each step writes at its rate for step_seconds
//      (tools/bench_writer.h), reading the consumer between transactions,
//      then drains: waits until every offered row is delivered, or until
//      nothing more arrived for drain_idle (the rest is lost). A step that
//      did not keep up (lost rows, or a drain longer than max(2 s, a fifth
//      of the step)), or that the generator could not offer, ends the
//      ramp; the steps after it are listed as not run. With open_ended,
//      after the last listed step the rate doubles while delivery keeps up;
//   4. stops the consumer and `msgx run` (SIGTERM; it must exit 0);
//   5. the baseline (tools/bench_baseline.h) on the first baseline_messages
//      rows the ramp wrote;
//   6. the reports (tools/bench_report.h).
// Problems (msgx ended early or not 0, lost, duplicated or out-of-order
// records, a failed baseline) are listed in the report; the caller exits
// non-zero when there are any.
//
// Thread-safety: runs on the caller's thread, plus the consumer's.
#pragma once

#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "base/config.h"
#include "base/result.h"
#include "tools/bench_report.h"

namespace msgx::app {

struct BenchStep {
  std::string name;
  double rate = 0;  // msg/s
};

// "smoke" (50 msg/s), "1k", "2500", "1.5k" ... separated by commas.
// kUsage on anything else or an empty list.
Result<std::vector<BenchStep>> ParseSteps(const std::string& list);

struct BenchOptions {
  std::string out_dir;
  std::vector<BenchStep> steps;
  bool open_ended = false;
  std::chrono::duration<double> step_time{30.0};
  std::chrono::duration<double> drain_idle{30.0};
  int flights = 500;
  int baseline_messages = 2000;
  std::string self_exe;     // the msgx binary
  std::string config_path;  // passed on as --config when not empty
  std::string command;      // for the report
  std::string corpus_dir;   // where the traffic templates are
};

Result<BenchReport> RunBench(const Config& config, const BenchOptions& options,
                             std::ostream& progress);

}  // namespace msgx::app
