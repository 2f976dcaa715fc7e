// `msgx bench`: the throughput benchmark as a command
// (docs/performance.md#msgx-bench; tools/bench_ramp.h does the work).
//
//   bench [--quick] [--out DIR] [--steps LIST] [--step-seconds N]
//         [--flights N] [--baseline-messages N] [--drain-idle-seconds N]
//         [--mailbox postgresql|mariadb]
//
// Runs `msgx run` as a child with this configuration. When the
// configuration names no mailbox, own database or Kafka, the services of
// `msgx dev up` are used (started if they are not running), as `eval
// "$(msgx dev env)"` would, with http.listen on a free port unless set;
// --mailbox says which server they keep the mailbox on (`msgx dev up
// --mailbox`). The bench writes to whichever mailbox mailbox.url names.
// Exit 0: the ramp ran and nothing was lost, duplicated or out of order and
// `msgx run` stopped with 0; 1: the reports are written but list problems;
// 2: usage or configuration error.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "app/command.h"
#include "app/setup.h"
#include "tools/bench_ramp.h"
#include "tools/dev_services.h"

namespace msgx::app {
namespace {

struct BenchFlags {
  bool quick = false;
  std::string out = "./var/bench";
  std::string steps;
  double step_seconds = 0;  // 0 = 30, or 10 with --quick
  int flights = 500;
  int baseline_messages = 0;  // 0 = 2000, or 500 with --quick
  double drain_idle_seconds = 30;
  std::string mailbox = "postgresql";  // for the dev services only
};

std::string SelfExe() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("msgx") : p.string();
}

// `export NAME='value'` lines (DevServices::EnvExports) into the
// environment, without overriding what is already set.
void ExportDevEnv(const std::string& lines) {
  std::istringstream in(lines);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("export ", 0) != 0) continue;
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string name = line.substr(7, eq - 7);
    std::string quoted = line.substr(eq + 1), value;
    bool in_quote = false;
    for (std::size_t i = 0; i < quoted.size(); ++i) {
      const char c = quoted[i];
      if (c == '\'') {
        in_quote = !in_quote;
      } else if (c == '\\' && !in_quote && i + 1 < quoted.size()) {
        value += quoted[++i];
      } else {
        value += c;
      }
    }
    ::setenv(name.c_str(), value.c_str(), 0);
  }
}

}  // namespace

void RegisterBench(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* bench = root.add_subcommand(
      "bench", "Throughput benchmark: a staged ramp of offered load through msgx run to Kafka");
  auto flags = std::make_shared<BenchFlags>();
  bench->add_flag("--quick", flags->quick, "A short ramp (smoke,1k,2k,5k; 10 s steps)");
  bench->add_option("--out", flags->out, "Where report.md, report.json and the charts go")
      ->capture_default_str();
  bench->add_option("--steps", flags->steps,
                    "Offered rates, e.g. smoke,1k,5k (default smoke,1k,5k,10k,20k,50k and on "
                    "while delivery keeps up)");
  bench
      ->add_option("--step-seconds", flags->step_seconds,
                   "Seconds each step writes (up to a day: a soak)")
      ->check(CLI::Range(0.5, 86400.0));
  bench->add_option("--flights", flags->flights, "Flights in the generated schedule")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  bench
      ->add_option("--baseline-messages", flags->baseline_messages,
                   "Rows the one-transaction-per-message baseline processes (0: none)")
      ->check(CLI::Range(0, 1000000));
  bench
      ->add_option("--drain-idle-seconds", flags->drain_idle_seconds,
                   "After a step, undelivered rows count as lost once nothing arrived this long")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 3600.0));
  bench
      ->add_option("--mailbox", flags->mailbox,
                   "Where the dev services keep the mailbox: postgresql (msgx's own server) or "
                   "mariadb (its own server, as in production); ignored when mailbox.url is set")
      ->capture_default_str()
      ->check(CLI::IsMember({"postgresql", "mariadb"}));
  bench->callback([&global, exit_code, flags, bench] {
    // Usage first: nothing is started for a bad command line.
    const std::string steps = !flags->steps.empty() ? flags->steps
                              : flags->quick        ? "smoke,1k,2k,5k"
                                                    : "smoke,1k,5k,10k,20k,50k";
    Result<std::vector<BenchStep>> parsed = ParseSteps(steps);
    if (!parsed.ok()) {
      std::cerr << "msgx bench: " << parsed.status().message() << "\n";
      *exit_code = 2;
      return;
    }
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    if (config->mailbox_url.empty() && config->postgres_url.empty() &&
        config->kafka_bootstrap_servers.empty()) {
      DevOptions d;
      d.dir = config->dev_dir;
      d.self_exe = SelfExe();
      d.mailbox = flags->mailbox;
      d.topics = {config->topic_msg, config->topic_schd, config->topic_ref, config->topic_progress};
      DevServices services(d);
      std::ostringstream quiet;
      Status up = services.Up(quiet);
      Result<std::string> env = up.ok() ? services.EnvExports() : Result<std::string>(up);
      if (!env.ok()) {
        std::cerr << "msgx bench: the dev services: " << env.status().ToString() << "\n";
        *exit_code = 1;
        return;
      }
      ExportDevEnv(*env);
      ::setenv("MSGX_HTTP_LISTEN", "127.0.0.1:0", 0);
      config = LoadAndInit(global);
      if (!config.ok()) {
        *exit_code = 2;
        return;
      }
      std::cout << "using the dev services in " << services.dir() << "\n";
    }
    if (config->mailbox_url.empty() || config->postgres_url.empty() ||
        config->kafka_bootstrap_servers.empty()) {
      std::cerr << "msgx bench: mailbox.url, postgres.url and kafka.bootstrap-servers must all "
                   "be configured (or none, for the dev services)\n";
      *exit_code = 2;
      return;
    }
    BenchOptions o;
    o.out_dir = std::filesystem::absolute(flags->out).string();
    o.steps = *parsed;
    o.open_ended = flags->steps.empty() && !flags->quick;
    o.step_time = std::chrono::duration<double>(
        flags->step_seconds > 0 ? flags->step_seconds : (flags->quick ? 10.0 : 30.0));
    o.drain_idle = std::chrono::duration<double>(flags->drain_idle_seconds);
    o.flights = flags->flights;
    o.baseline_messages = bench->count("--baseline-messages") > 0 ? flags->baseline_messages
                          : flags->quick                          ? 500
                                                                  : 2000;
    o.self_exe = SelfExe();
    o.config_path = global.config_path;
    o.corpus_dir = MSGX_DEFAULT_CORPUS_DIR;
    o.command = "msgx bench" + std::string(flags->quick ? " --quick" : "") +
                (flags->steps.empty() ? "" : " --steps " + flags->steps) + " --step-seconds " +
                std::to_string(static_cast<int>(o.step_time.count())) +
                (bench->count("--mailbox") > 0 ? " --mailbox " + flags->mailbox : "");
    Result<BenchReport> report = RunBench(*config, o, std::cout);
    if (!report.ok()) {
      std::cerr << "msgx bench: " << report.status().ToString() << "\n";
      *exit_code = report.status().error_class() == ErrorClass::kConfig ||
                           report.status().error_class() == ErrorClass::kUsage
                       ? 2
                       : 1;
      return;
    }
    for (const std::string& p : report->problems) std::cerr << "msgx bench: " << p << "\n";
    *exit_code = report->problems.empty() ? 0 : 1;
  });
}

}  // namespace msgx::app
