// BenchReport: what `msgx bench` writes into --out DIR
// (docs/performance.md#msgx-bench):
//   report.json  {"mailbox": "PostgreSQL"|"MariaDB", "steps": [...],
//                "baseline": {...}, ...}: per step offered,
//                delivered, lost, duplicated, order_violations, p50_ms,
//                p95_ms, p99_ms, max_ms, cpu (msgx's CPU, cores: CPU seconds
//                / wall seconds of the step and its drain), rss (msgx's peak
//                resident set so far, bytes), and the rates;
//   report.md    the same as tables, the machine, and the caveats (the Kafka
//                mock is in memory and not durable);
//   throughput.png, latency.png  delivered msg/s and p50/p95/p99 latency
//                against offered msg/s, drawn by gnuplot (charts.gp and
//                steps.dat are left beside them);
//   latency-seconds.png  each step's p99 second by second (seconds.dat;
//                report.json's "seconds": [second, delivered, p50_ms,
//                p99_ms, max_ms] per second of the step).
//
// Thread-safety: functions of their arguments (DrawCharts runs gnuplot).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "tools/bench_baseline.h"
#include "tools/bench_ledger.h"
#include "tools/bench_writer.h"

namespace msgx::app {

struct StepReport {
  std::string name;         // "smoke", "1k", ...
  double target_rate = 0;   // msg/s asked of the generator
  double step_seconds = 0;  // how long it was asked to write
  StepCounts counts;
  WriteStats write;                // what the mailbox accepted
  double offered_per_s = 0;        // rows written / step seconds
  double delivered_per_s = 0;      // (delivered - 1) / (last delivery - first delivery)
  double drain_seconds = 0;        // end of writing to the last delivery
  double cpu = 0;                  // cores
  std::int64_t rss = 0;            // bytes
  bool generator_limited = false;  // the mailbox took < 95% of the target
  bool kept_up = false;            // nothing lost, drained within max(2 s, step / 5)
};

struct BenchReport {
  std::string started_at;  // UTC
  std::string machine;     // cores, memory, load average
  std::string command;
  std::string mailbox;  // "PostgreSQL" or "MariaDB": where the traffic is written
  StepCounts setup;     // the flights and one block of traffic, before the ramp
  std::vector<StepReport> steps;
  std::vector<std::string> not_run;  // steps left out, with why
  std::optional<BaselineFigures> baseline;
  std::string msgx_exit;              // how `msgx run` ended
  std::vector<std::string> problems;  // empty = the run is clean
  std::vector<std::string> notes;     // worth knowing, not a failure
};

std::string ReportJson(const BenchReport& r);
std::string ReportMarkdown(const BenchReport& r);
// Writes report.json, report.md and the charts into `dir`. A missing or
// failing gnuplot is not an error of the run: it is noted in report.md
// (via *chart_note) and the reports are still written. kInfra when a file
// cannot be written.
Status WriteReports(BenchReport& r, const std::string& dir, std::string* chart_note);

}  // namespace msgx::app
