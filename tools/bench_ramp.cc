#include "tools/bench_ramp.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "base/clock.h"
#include "codecs/time_zone.h"
#include "tools/bench_consumer.h"
#include "tools/bench_ledger.h"
#include "tools/bench_process.h"
#include "tools/bench_traffic.h"
#include "tools/bench_writer.h"

namespace msgx::app {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr double kSmokeRate = 50;
constexpr double kOpenEndedCap = 1'600'000;

std::string UtcNow() {
  std::time_t t = std::time(nullptr);
  char b[32];
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return b;
}

std::string Machine() {
  std::ifstream mem("/proc/meminfo");
  std::string key;
  long kb = 0;
  mem >> key >> kb;
  std::ifstream load("/proc/loadavg");
  std::string l1, l5, l15;
  load >> l1 >> l5 >> l15;
  std::ostringstream m;
  m << std::thread::hardware_concurrency() << " cores, " << kb / (1024L * 1024L)
    << " GiB, load average " << l1 << " " << l5 << " " << l15 << " at the start";
  return m.str();
}

std::string RateName(double rate) {
  if (rate >= 1000 && std::fmod(rate, 1000) == 0) {
    return std::to_string(static_cast<long long>(rate / 1000)) + "k";
  }
  return std::to_string(static_cast<long long>(rate));
}

double Seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

// Everything one run holds together.
class Ramp {
 public:
  Ramp(const Config& config, const BenchOptions& o, std::ostream& progress)
      : config_(config), o_(o), out_(progress) {}

  Result<BenchReport> Run();

 private:
  void Pump() {
    for (const Receipt& r : consumer_->Take()) ledger_.Received(r);
  }
  bool Drain(std::chrono::duration<double> idle, SteadyClock::time_point* last_progress);
  std::optional<StepReport> Step(const BenchStep& step);
  std::vector<std::string> MsgxArgs(const std::string& command) const {
    std::vector<std::string> a{o_.self_exe, command};
    if (!o_.config_path.empty()) {
      a.push_back("--config");
      a.push_back(o_.config_path);
    }
    return a;
  }

  const Config& config_;
  const BenchOptions& o_;
  std::ostream& out_;
  std::unique_ptr<BenchConsumer> consumer_;
  std::unique_ptr<MailboxWriter> writer_;
  std::unique_ptr<TrafficGenerator> gen_;
  std::optional<TimeZone> zone_;
  BenchProcess msgx_;
  BenchLedger ledger_;
  std::vector<std::int64_t> baseline_ids_;
  BenchReport report_;
};

// Pumps the consumer until nothing is outstanding (true) or nothing new was
// delivered for `idle`, or msgx died (false).
bool Ramp::Drain(std::chrono::duration<double> idle, SteadyClock::time_point* last_progress) {
  std::int64_t outstanding = ledger_.Outstanding();
  *last_progress = SteadyClock::now();
  while (ledger_.Outstanding() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    Pump();
    if (ledger_.Outstanding() < outstanding) {
      outstanding = ledger_.Outstanding();
      *last_progress = SteadyClock::now();
    }
    if (SteadyClock::now() - *last_progress > idle || !msgx_.Alive()) return false;
  }
  return true;
}

std::optional<StepReport> Ramp::Step(const BenchStep& step) {
  StepReport s;
  s.name = step.name;
  s.target_rate = step.rate;
  s.step_seconds = o_.step_time.count();
  ledger_.BeginStep();
  const std::optional<ProcSample> cpu0 = msgx_.Sample();
  const auto t0 = SteadyClock::now();
  Result<WriteStats> w = writer_->WriteAt(
      step.rate, o_.step_time, *gen_, *zone_,
      [this](std::int64_t id, TrafficKind kind, SteadyClock::time_point at) {
        ledger_.Committed(id, kind, at);
        if (static_cast<int>(baseline_ids_.size()) < o_.baseline_messages) {
          baseline_ids_.push_back(id);
        }
      },
      [this] { Pump(); });
  if (!w.ok()) {
    report_.problems.push_back("step " + step.name + ": " + w.status().ToString());
    return std::nullopt;
  }
  s.write = *w;
  const auto written = SteadyClock::now();
  SteadyClock::time_point last_progress;
  const bool drained = Drain(o_.drain_idle, &last_progress);
  const auto t1 = drained ? SteadyClock::now() : last_progress;
  const std::optional<ProcSample> cpu1 = msgx_.Sample();
  s.counts = ledger_.Counts();
  const StepCounts& c = s.counts;
  // The judged rows only, like delivered_per_s; mailbox_rows_per_s has all.
  if (s.write.seconds > 0) s.offered_per_s = static_cast<double>(c.offered) / s.write.seconds;
  if (c.delivered > 1 && c.last_delivery > c.first_delivery) {
    s.delivered_per_s =
        static_cast<double>(c.delivered - 1) / Seconds(c.last_delivery - c.first_delivery);
  }
  s.drain_seconds = c.last_delivery > written ? Seconds(c.last_delivery - written) : 0;
  if (cpu0 && cpu1 && t1 > t0) s.cpu = (cpu1->cpu_seconds - cpu0->cpu_seconds) / Seconds(t1 - t0);
  if (cpu1) s.rss = cpu1->peak_rss_bytes;
  s.generator_limited = s.write.rows_per_second() < 0.95 * step.rate;
  // Kept up: nothing lost, and the backlog left when writing stopped was
  // gone within max(2 s, a fifth of the step): a pipeline that delivers at
  // 80% of the offered rate for a whole step needs a quarter of it to drain.
  s.kept_up = c.lost == 0 && s.drain_seconds <= std::max(2.0, 0.2 * s.step_seconds);
  if (c.lost > 0) {
    report_.problems.push_back("step " + s.name + ": " + std::to_string(c.lost) +
                               " offered rows never delivered (nothing arrived for " +
                               std::to_string(static_cast<int>(o_.drain_idle.count())) + " s)");
  }
  if (c.duplicated > 0) {
    report_.problems.push_back("step " + s.name + ": " + std::to_string(c.duplicated) +
                               " duplicated records (by msgx-event-id)");
  }
  if (c.order_violations > 0) {
    report_.problems.push_back("step " + s.name + ": " + std::to_string(c.order_violations) +
                               " per-flight order violations");
  }
  char line[320];
  std::snprintf(line, sizeof(line),
                "step %-6s offered %7lld (%7.0f msg/s, mailbox %7.0f rows/s) delivered %7lld "
                "(%7.0f msg/s) lost %lld dup %lld p50 %.1f p99 %.1f ms cpu %.2f%s\n",
                s.name.c_str(), static_cast<long long>(c.offered), s.offered_per_s,
                s.write.rows_per_second(), static_cast<long long>(c.delivered), s.delivered_per_s,
                static_cast<long long>(c.lost), static_cast<long long>(c.duplicated), c.p50_ms,
                c.p99_ms, s.cpu,
                s.generator_limited ? " (generator-limited)"
                : s.kept_up         ? ""
                                    : " (did not keep up)");
  out_ << line << std::flush;
  return s;
}

Result<BenchReport> Ramp::Run() {
  report_.started_at = UtcNow();
  report_.machine = Machine();
  report_.command = o_.command;
  std::error_code ec;
  std::filesystem::create_directories(o_.out_dir, ec);
  if (ec) return Status::Config("--out " + o_.out_dir + ": " + ec.message());
  Result<TimeZone> zone = TimeZone::Load(config_.airport_timezone);
  if (!zone.ok()) return zone.status();
  zone_ = *zone;
  Result<TrafficTemplates> templates = LoadTrafficTemplates(o_.corpus_dir);
  if (!templates.ok()) return templates.status();
  const std::string log = o_.out_dir + "/msgx.log";

  {
    BenchProcess migrate;
    if (Status s = migrate.Start(MsgxArgs("migrate"), {}, log); !s.ok()) return s;
    ChildExit e = migrate.Wait();
    if (e.code != 0) return Status::Infra("msgx migrate failed (" + e.ToString() + "); see " + log);
  }
  Result<std::unique_ptr<MailboxWriter>> writer = MailboxWriter::Open(config_);
  if (!writer.ok()) return writer.status();
  writer_ = std::move(*writer);
  report_.mailbox = writer_->mailbox_kind();
  Result<int> max_seqn = writer_->MaxSeqn();
  if (!max_seqn.ok()) return max_seqn.status();
  gen_ =
      std::make_unique<TrafficGenerator>(std::move(*templates), o_.flights, *max_seqn % 999999 + 1);
  consumer_ = std::make_unique<BenchConsumer>(
      config_.kafka_bootstrap_servers,
      std::vector<std::string>{config_.topic_msg, config_.topic_schd, config_.topic_ref});
  if (Status s = consumer_->Start(); !s.ok()) return s;
  if (Status s = msgx_.Start(MsgxArgs("run"), {}, log); !s.ok()) return s;
  out_ << "msgx run started (pid " << msgx_.pid() << "), log " << log << "\n" << std::flush;

  // Setup: the flights, then one block of traffic, delivered.
  ledger_.BeginStep();
  const LocalTime now = AirportLocalTime(SystemClock::Default()->NowMicros(), *zone_);
  std::vector<TrafficMessage> setup = gen_->Setup(now);
  for (int i = 0; i < 20; ++i) setup.push_back(gen_->Next(now));
  auto commit = [this](std::int64_t id, TrafficKind kind, SteadyClock::time_point at) {
    ledger_.Committed(id, kind, at);
  };
  bool ready = true;
  if (Status s = writer_->WriteNow(setup, commit); !s.ok()) return s;
  SteadyClock::time_point last;
  if (!Drain(std::chrono::seconds(120), &last)) {
    report_.problems.push_back(msgx_.Alive() ? "msgx did not deliver the setup traffic in 120 s"
                                             : "msgx run ended during start-up");
    ready = false;
  }
  report_.setup = ledger_.Counts();

  if (ready) {
    out_ << "setup delivered: " << o_.flights << " flights\n" << std::flush;
    std::vector<BenchStep> steps = o_.steps;
    for (std::size_t i = 0; i < steps.size(); ++i) {
      std::optional<StepReport> s = Step(steps[i]);
      if (!s) break;
      report_.steps.push_back(*s);
      std::string why;
      if (!msgx_.Alive()) {
        report_.problems.push_back("msgx run ended during step " + s->name);
        why = "msgx run ended";
      } else if (s->generator_limited) {
        why = "the generator could not offer " + s->name;
      } else if (!s->kept_up) {
        why = "delivery did not keep up at " + s->name;
      }
      if (!why.empty()) {
        for (std::size_t k = i + 1; k < steps.size(); ++k) {
          report_.not_run.push_back(steps[k].name + " (" + why + ")");
        }
        break;
      }
      if (i + 1 == steps.size() && o_.open_ended && steps[i].rate * 2 <= kOpenEndedCap) {
        steps.push_back({RateName(steps[i].rate * 2), steps[i].rate * 2});
      }
    }
  }

  consumer_->Stop();
  const bool alive = msgx_.Alive();
  const ChildExit e = msgx_.Terminate(std::chrono::seconds(60));
  report_.msgx_exit = (alive ? "stopped by SIGTERM, " : "ended by itself, ") + e.ToString();
  if (!alive || e.code != 0) report_.problems.push_back("msgx run: " + report_.msgx_exit);
  out_ << "msgx run: " << report_.msgx_exit << "\n" << std::flush;

  if (!baseline_ids_.empty()) {
    Result<BaselineFigures> b = RunBaseline(config_, baseline_ids_);
    if (b.ok()) {
      report_.baseline = *b;
      char line[200];
      std::snprintf(line, sizeof(line),
                    "baseline: %lld messages, %.0f msg/s, p50 %.1f p99 %.1f ms\n",
                    static_cast<long long>(b->messages), b->msg_per_s, b->p50_ms, b->p99_ms);
      out_ << line;
    } else {
      report_.problems.push_back("baseline: " + b.status().ToString());
    }
  }
  std::string chart_note;
  if (Status s = WriteReports(report_, o_.out_dir, &chart_note); !s.ok()) return s;
  if (!chart_note.empty()) out_ << chart_note << "\n";
  out_ << "reports in " << o_.out_dir << "\n";
  return report_;
}

}  // namespace

Result<std::vector<BenchStep>> ParseSteps(const std::string& list) {
  std::vector<BenchStep> steps;
  if (!list.empty() && list.back() == ',')
    return Status::Usage("--steps: '" + list + "' ends in a comma");
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item == "smoke") {
      steps.push_back({"smoke", kSmokeRate});
      continue;
    }
    double mult = 1;
    std::string num = item;
    if (!num.empty() && (num.back() == 'k' || num.back() == 'K')) {
      mult = 1000;
      num.pop_back();
    }
    char* end = nullptr;
    const double v = std::strtod(num.c_str(), &end);
    if (num.empty() || end == nullptr || *end != '\0' || !(v > 0) || v * mult > 10'000'000) {
      return Status::Usage("--steps: '" + item +
                           "' is not a rate (smoke, or msg/s such as 500, 1k, 2.5k)");
    }
    steps.push_back({item, v * mult});
  }
  if (steps.empty()) return Status::Usage("--steps: no step given");
  return steps;
}

Result<BenchReport> RunBench(const Config& config, const BenchOptions& options,
                             std::ostream& progress) {
  return Ramp(config, options, progress).Run();
}

}  // namespace msgx::app
