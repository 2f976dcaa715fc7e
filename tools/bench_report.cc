#include "tools/bench_report.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace msgx::app {
namespace {

std::string Num(double v, int decimals = 1) {
  char b[64];
  std::snprintf(b, sizeof(b), "%.*f", decimals, v);
  return b;
}

std::string JsonString(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof(b), "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string Bool(bool b) { return b ? "true" : "false"; }

std::string Mib(std::int64_t bytes) {
  return Num(static_cast<double>(bytes) / (1024.0 * 1024.0), 0) + " MiB";
}

Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Status::Infra("cannot write " + path);
  return Status::Ok();
}

}  // namespace

std::string ReportJson(const BenchReport& r) {
  std::ostringstream j;
  j << "{\n  \"started_at\": " << JsonString(r.started_at)
    << ",\n  \"machine\": " << JsonString(r.machine)
    << ",\n  \"command\": " << JsonString(r.command)
    << ",\n  \"mailbox\": " << JsonString(r.mailbox)
    << ",\n  \"kafka\": " << JsonString("librdkafka mock cluster: in memory, not durable")
    << ",\n  \"setup\": {\"written\": " << r.setup.written << ", \"offered\": " << r.setup.offered
    << ", \"delivered\": " << r.setup.delivered << "},\n  \"steps\": [";
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const StepReport& s = r.steps[i];
    const StepCounts& c = s.counts;
    j << (i == 0 ? "\n" : ",\n") << "    {\"name\": " << JsonString(s.name)
      << ", \"target_rate\": " << Num(s.target_rate, 0)
      << ", \"step_seconds\": " << Num(s.step_seconds, 1) << ", \"written\": " << c.written
      << ", \"offered\": " << c.offered << ", \"delivered\": " << c.delivered
      << ", \"lost\": " << c.lost << ", \"duplicated\": " << c.duplicated
      << ", \"order_violations\": " << c.order_violations
      << ", \"schedule_offered\": " << c.schedule_offered
      << ", \"schedule_pushes\": " << c.schedule_pushes << ", \"p50_ms\": " << Num(c.p50_ms, 2)
      << ", \"p95_ms\": " << Num(c.p95_ms, 2) << ", \"p99_ms\": " << Num(c.p99_ms, 2)
      << ", \"max_ms\": " << Num(c.max_ms, 2) << ", \"offered_per_s\": " << Num(s.offered_per_s)
      << ", \"mailbox_rows_per_s\": " << Num(s.write.rows_per_second())
      << ", \"mailbox_transactions\": " << s.write.transactions
      << ", \"delivered_per_s\": " << Num(s.delivered_per_s)
      << ", \"drain_s\": " << Num(s.drain_seconds, 2) << ", \"cpu\": " << Num(s.cpu, 3)
      << ", \"rss\": " << s.rss << ", \"generator_limited\": " << Bool(s.generator_limited)
      << ", \"kept_up\": " << Bool(s.kept_up) << ", \"seconds\": [";
    for (std::size_t k = 0; k < c.seconds.size(); ++k) {
      const SecondLatency& x = c.seconds[k];
      j << (k == 0 ? "" : ", ") << "[" << x.second << ", " << x.delivered << ", "
        << Num(x.p50_ms, 2) << ", " << Num(x.p99_ms, 2) << ", " << Num(x.max_ms, 2) << "]";
    }
    j << "]}";
  }
  j << "\n  ],\n  \"not_run\": [";
  for (std::size_t i = 0; i < r.not_run.size(); ++i) {
    j << (i == 0 ? "" : ", ") << JsonString(r.not_run[i]);
  }
  j << "],\n  \"baseline\": ";
  if (r.baseline) {
    const BaselineFigures& b = *r.baseline;
    j << "{\"messages\": " << b.messages << ", \"failed\": " << b.failed
      << ", \"seconds\": " << Num(b.seconds, 2) << ", \"msg_per_s\": " << Num(b.msg_per_s)
      << ", \"p50_ms\": " << Num(b.p50_ms, 2) << ", \"p95_ms\": " << Num(b.p95_ms, 2)
      << ", \"p99_ms\": " << Num(b.p99_ms, 2) << ", \"max_ms\": " << Num(b.max_ms, 2) << "}";
  } else {
    j << "null";
  }
  j << ",\n  \"msgx_exit\": " << JsonString(r.msgx_exit) << ",\n  \"problems\": [";
  for (std::size_t i = 0; i < r.problems.size(); ++i) {
    j << (i == 0 ? "" : ", ") << JsonString(r.problems[i]);
  }
  j << "]\n}\n";
  return j.str();
}

std::string ReportMarkdown(const BenchReport& r) {
  std::ostringstream m;
  m << "# msgx bench\n\n"
    << "- started: " << r.started_at << "\n- machine: " << r.machine << "\n- command: `"
    << r.command << "`\n- mailbox: " << r.mailbox << "\n- `msgx run`: " << r.msgx_exit << "\n"
    << "- Kafka: librdkafka's mock cluster (`msgx dev kafka`), **in memory and not durable**: "
       "no disk, no replication. Compare with systems measured on real brokers with that in "
       "mind.\n"
    << "- Delivery is judged by a read_committed consumer running during each step, per "
       "`msgx-mailbox-id` and `msgx-event-id`; latency is from the mailbox row's commit to its "
       "`KAFKA:msg` record, both on this process's steady clock.\n\n";
  m << "## Ramp\n\n"
    << "| step | target msg/s | offered | offered msg/s | mailbox rows/s | delivered | "
       "delivered msg/s | lost | dup | order | p50 ms | p95 ms | p99 ms | max ms | schd rows / "
       "pushes | cpu (cores) | peak RSS | verdict |\n"
    << "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const StepReport& s : r.steps) {
    const StepCounts& c = s.counts;
    std::string verdict = s.generator_limited ? "generator-limited (not msgx's limit)"
                          : s.kept_up         ? "kept up"
                                              : "did not keep up";
    m << "| " << s.name << " | " << Num(s.target_rate, 0) << " | " << c.offered << " | "
      << Num(s.offered_per_s, 0) << " | " << Num(s.write.rows_per_second(), 0) << " | "
      << c.delivered << " | " << Num(s.delivered_per_s, 0) << " | " << c.lost << " | "
      << c.duplicated << " | " << c.order_violations << " | " << Num(c.p50_ms) << " | "
      << Num(c.p95_ms) << " | " << Num(c.p99_ms) << " | " << Num(c.max_ms) << " | "
      << c.schedule_offered << " / " << c.schedule_pushes << " | " << Num(s.cpu, 2) << " | "
      << Mib(s.rss) << " | " << verdict << " |\n";
  }
  m << "\nThe worst second of each step (`seconds.dat`, `latency-seconds.png`):\n\n";
  for (const StepReport& s : r.steps) {
    const auto worst = std::max_element(
        s.counts.seconds.begin(), s.counts.seconds.end(),
        [](const SecondLatency& a, const SecondLatency& b) { return a.p99_ms < b.p99_ms; });
    if (worst == s.counts.seconds.end()) continue;
    m << "- " << s.name << ": p99 " << Num(worst->p99_ms) << " ms in second " << worst->second
      << " (" << worst->delivered << " rows)\n";
  }
  for (const std::string& n : r.not_run) m << "\nnot run: " << n << "\n";
  m << "\n`offered` counts the rows judged one by one (FLOP → `KAFKA:msg`, reference → "
       "`KAFKA:ref`); schedule rows (`SCHD UPD`) are counted apart, with the `KAFKA:schd` "
       "records that pushed them in batches. `offered msg/s` and `delivered msg/s` count those "
       "judged rows; `mailbox rows/s` counts every row the mailbox accepted.\n";
  m << "\n## Baseline (one transaction per message)\n\n";
  if (r.baseline) {
    const BaselineFigures& b = *r.baseline;
    m << "Per message: read, decode with the SIS codec, write the outcome and the event in one "
         "PostgreSQL transaction, send to Kafka and wait for the ack, mark the mailbox row; on "
         "the same rows and servers, with `msgx run` stopped.\n\n"
      << "| messages | msg/s | p50 ms | p95 ms | p99 ms | max ms |\n|---|---|---|---|---|---|\n"
      << "| " << b.messages << " | " << Num(b.msg_per_s, 0) << " | " << Num(b.p50_ms, 2) << " | "
      << Num(b.p95_ms, 2) << " | " << Num(b.p99_ms, 2) << " | " << Num(b.max_ms, 2) << " |\n";
  } else {
    m << "not run\n";
  }
  m << "\n## Charts\n\n![delivered throughput](throughput.png)\n\n![latency](latency.png)\n"
    << "\n![latency by second of each step](latency-seconds.png)\n";
  for (const std::string& n : r.notes) m << "\nnote: " << n << "\n";
  if (!r.problems.empty()) {
    m << "\n## Problems\n\n";
    for (const std::string& p : r.problems) m << "- " << p << "\n";
  }
  return m.str();
}

Status WriteReports(BenchReport& r, const std::string& dir, std::string* chart_note) {
  std::ostringstream dat;
  dat << "# offered_per_s delivered_per_s p50_ms p95_ms p99_ms name\n";
  for (const StepReport& s : r.steps) {
    dat << Num(s.offered_per_s) << " " << Num(s.delivered_per_s) << " " << Num(s.counts.p50_ms, 2)
        << " " << Num(s.counts.p95_ms, 2) << " " << Num(s.counts.p99_ms, 2) << " " << s.name
        << "\n";
  }
  if (Status s = WriteFile(dir + "/steps.dat", dat.str()); !s.ok()) return s;
  // One block per step (two blank lines apart: gnuplot's index), a line per
  // second of the step.
  std::ostringstream secs;
  secs << "# second delivered p50_ms p99_ms max_ms, one block per step\n";
  std::string plot_seconds;
  int blocks = 0;
  for (const StepReport& s : r.steps) {
    if (s.counts.seconds.empty()) continue;
    secs << (blocks == 0 ? "" : "\n\n") << "# step " << s.name << "\n";
    for (const SecondLatency& x : s.counts.seconds) {
      secs << x.second << " " << x.delivered << " " << Num(x.p50_ms, 2) << " " << Num(x.p99_ms, 2)
           << " " << Num(x.max_ms, 2) << "\n";
    }
    plot_seconds += std::string(blocks == 0 ? "plot '" + dir + "/seconds.dat'" : ", ''") +
                    " index " + std::to_string(blocks) +
                    " using 1:4 with linespoints lw 2 pt 7 title '" + s.name + " p99'";
    ++blocks;
  }
  if (Status s = WriteFile(dir + "/seconds.dat", secs.str()); !s.ok()) return s;
  const std::string gp =
      "set terminal png size 800,500\n"
      "set grid\nset key top left\nset xlabel 'offered (msg/s)'\n"
      "set output '" +
      dir +
      "/throughput.png'\n"
      "set title 'msgx bench: delivered to Kafka vs offered'\n"
      "set ylabel 'delivered (msg/s)'\n"
      "plot '" +
      dir +
      "/steps.dat' using 1:2 with linespoints lw 2 pt 7 title 'delivered', "
      "x with lines dt 2 title 'offered'\n"
      "set output '" +
      dir +
      "/latency.png'\n"
      "set title 'msgx bench: mailbox commit to KAFKA:msg record'\n"
      "set ylabel 'latency (ms)'\nset logscale y\n"
      "plot '" +
      dir +
      "/steps.dat' using 1:3 with linespoints lw 2 pt 7 title 'p50', "
      "'' using 1:4 with linespoints lw 2 pt 7 title 'p95', "
      "'' using 1:5 with linespoints lw 2 pt 7 title 'p99'\n"
      "set output '" +
      dir +
      "/latency-seconds.png'\n"
      "set title 'msgx bench: p99 of each second of a step, by commit time'\n"
      "set xlabel 'second of the step'\n" +
      (plot_seconds.empty() ? std::string("unset output\n") : plot_seconds + "\n");
  if (Status s = WriteFile(dir + "/charts.gp", gp); !s.ok()) return s;
  const std::string cmd = "gnuplot '" + dir + "/charts.gp' >'" + dir + "/gnuplot.log' 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    *chart_note =
        "charts not drawn: gnuplot failed or is missing (apt-get install gnuplot-nox); "
        "see " +
        dir + "/gnuplot.log";
    r.notes.push_back(*chart_note);
  }
  if (Status s = WriteFile(dir + "/report.json", ReportJson(r)); !s.ok()) return s;
  return WriteFile(dir + "/report.md", ReportMarkdown(r));
}

}  // namespace msgx::app
