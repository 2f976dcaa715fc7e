#include "stream/service/job_stages.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "base/metrics.h"
#include "stream/jobs/daily_sweep.h"
#include "stream/jobs/event_retention.h"
#include "stream/pg/pg_session.h"

namespace msgx {
namespace {

constexpr Millis kRunEvery{60'000};

// A run every minute, or every half retention when that is shorter (at
// least every second): an event is never kept much past its retention.
Millis RunEvery(const Config& c) {
  return std::clamp(c.pipeline.event_retention / 2, Millis(1000), kRunEvery);
}
constexpr int kBatch = 1000;
constexpr std::int64_t kBacklogCap = 1'000'000;

// The metrics every job has, labelled {job="<name>"} (times in seconds
// since the epoch).
struct JobMetrics {
  explicit JobMetrics(const std::string& job) {
    Metrics& m = Metrics::Global();
    const Labels l = {{"job", job}};
    rows = m.GetCounter("msgx_job_rows_total", "Rows a job has done", l);
    backlog = m.GetGauge("msgx_job_backlog", "Rows due for a job", l);
    last_run = m.GetGauge("msgx_job_last_run_seconds", "When a job's last run ended", l);
    next_run = m.GetGauge("msgx_job_next_run_seconds", "When a job's next run starts", l);
  }
  static double Seconds(MicrosSinceEpoch t) { return static_cast<double>(t) / 1e6; }
  Counter* rows;
  Gauge* backlog;
  Gauge* last_run;
  Gauge* next_run;
};

// A run is a sequence of batches until one is short; then the stage waits
// for the next run.
class EventRetentionStage final : public Stage {
 public:
  explicit EventRetentionStage(const JobDeps& d)
      : pg_(d.config->postgres_url),
        job_(&pg_, d.clock, Options(d)),
        leader_(d.leader),
        clock_(d.clock),
        every_(RunEvery(*d.config)),
        m_("event-retention") {}

  StepOutcome Step() override {
    if (!in_run_) {
      auto due = job_.Backlog(kBacklogCap);
      if (!due.ok()) return StepOutcome::FromStatus(due.status());
      backlog_ = *due;
      in_run_ = true;
    }
    auto n = job_.Step(leader_->epoch());
    if (!n.ok()) return StepOutcome::FromStatus(n.status());
    done_ += *n;
    m_.rows->Add(*n);
    backlog_ = std::max<std::int64_t>(0, backlog_ - *n);
    m_.backlog->Set(static_cast<double>(backlog_));
    if (*n >= kBatch) return StepOutcome::Progressed();
    in_run_ = false;
    const MicrosSinceEpoch now = clock_->NowMicros();
    last_run_ = now;
    next_run_ = now + every_.count() * 1000;
    backlog_ = 0;
    m_.backlog->Set(0);
    m_.last_run->Set(JobMetrics::Seconds(now));
    m_.next_run->Set(JobMetrics::Seconds(next_run_));
    return StepOutcome::WaitUntil(next_run_, "next run");
  }

  void Figures(StageFigures* out) const override {
    out->emplace_back("rows", done_.load());
    out->emplace_back("backlog", backlog_.load());
    out->emplace_back("last_run_micros", last_run_.load());
    out->emplace_back("next_run_micros", next_run_.load());
  }

 private:
  static EventRetentionOptions Options(const JobDeps& d) {
    EventRetentionOptions o;
    o.log_uuid = d.log_uuid;
    o.retention = d.config->pipeline.event_retention;
    o.batch = kBatch;
    return o;
  }

  PgSession pg_;
  EventRetention job_;
  LeadershipKeeper* leader_;
  const Clock* clock_;
  const Millis every_;
  JobMetrics m_;
  bool in_run_ = false;
  std::atomic<std::int64_t> done_{0};
  std::atomic<std::int64_t> backlog_{0};
  std::atomic<std::int64_t> last_run_{0};
  std::atomic<std::int64_t> next_run_{0};
};

// Waits for the day's time, appends the day's commands, waits for the next
// day's.
class DailySweepStage final : public Stage {
 public:
  DailySweepStage(const JobDeps& d, int at_minutes)
      : job_(d.log, d.zone, d.clock, at_minutes),
        appended_(d.appended),
        m_("daily-sweep"),
        clock_(d.clock) {}

  StepOutcome Step() override {
    auto r = job_.Step();
    if (!r.ok()) return StepOutcome::FromStatus(r.status());
    day_ = r->day;
    next_run_ = r->next_at;
    m_.next_run->Set(JobMetrics::Seconds(r->next_at));
    if (r->appended) {
      ++runs_;
      m_.rows->Add(2);
      last_run_ = clock_->NowMicros();
      m_.last_run->Set(JobMetrics::Seconds(last_run_));
      if (appended_) appended_();
    }
    return StepOutcome::WaitUntil(r->next_at, "next run");
  }

  void Figures(StageFigures* out) const override {
    out->emplace_back("runs", runs_.load());
    out->emplace_back("day", day_.load());
    out->emplace_back("last_run_micros", last_run_.load());
    out->emplace_back("next_run_micros", next_run_.load());
  }

 private:
  DailySweep job_;
  std::function<void()> appended_;
  JobMetrics m_;
  const Clock* clock_;
  std::atomic<std::int64_t> runs_{0};
  std::atomic<std::int64_t> day_{0};
  std::atomic<std::int64_t> last_run_{0};
  std::atomic<std::int64_t> next_run_{0};
};

}  // namespace

Status AddJobStages(const JobDeps& deps, StageRunner* runner) {
  StagePolicy p;
  p.needs_leadership = true;
  p.idle_wait = RunEvery(*deps.config);
  p.backoff = {Millis(1000)};
  p.backoff_cap = kRunEvery;
  runner->Add(kEventRetentionStage, std::make_unique<EventRetentionStage>(deps), p);
  if (deps.config->history_sweep_at == "off") return Status::Ok();
  auto at = ParseTimeOfDay(deps.config->history_sweep_at);
  if (!at.ok()) return at.status();
  StagePolicy daily = p;
  daily.idle_wait = kRunEvery;
  runner->Add(kDailySweepStage, std::make_unique<DailySweepStage>(deps, *at), daily);
  return Status::Ok();
}

}  // namespace msgx
