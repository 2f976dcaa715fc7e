#include "stream/service/job_stages.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "base/metrics.h"
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
        rows_(Metric().GetCounter("msgx_job_rows_total", "Rows a job has done", Labels())),
        backlog_m_(Metric().GetGauge("msgx_job_backlog", "Rows due for a job", Labels())),
        last_m_(Metric().GetGauge("msgx_job_last_run_seconds",
                                  "When a job's last run ended (seconds since the epoch)",
                                  Labels())),
        next_m_(Metric().GetGauge("msgx_job_next_run_seconds",
                                  "When a job's next run starts (seconds since the epoch)",
                                  Labels())) {}

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
    rows_->Add(*n);
    backlog_ = std::max<std::int64_t>(0, backlog_ - *n);
    backlog_m_->Set(static_cast<double>(backlog_));
    if (*n >= kBatch) return StepOutcome::Progressed();
    in_run_ = false;
    const MicrosSinceEpoch now = clock_->NowMicros();
    last_run_ = now;
    next_run_ = now + every_.count() * 1000;
    backlog_ = 0;
    backlog_m_->Set(0);
    last_m_->Set(static_cast<double>(now) / 1e6);
    next_m_->Set(static_cast<double>(next_run_.load()) / 1e6);
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
  static Metrics& Metric() { return Metrics::Global(); }
  static msgx::Labels Labels() { return {{"job", "event-retention"}}; }

  PgSession pg_;
  EventRetention job_;
  LeadershipKeeper* leader_;
  const Clock* clock_;
  const Millis every_;
  Counter* rows_;
  Gauge* backlog_m_;
  Gauge* last_m_;
  Gauge* next_m_;
  bool in_run_ = false;
  std::atomic<std::int64_t> done_{0};
  std::atomic<std::int64_t> backlog_{0};
  std::atomic<std::int64_t> last_run_{0};
  std::atomic<std::int64_t> next_run_{0};
};

}  // namespace

void AddJobStages(const JobDeps& deps, StageRunner* runner) {
  StagePolicy p;
  p.needs_leadership = true;
  p.idle_wait = RunEvery(*deps.config);
  p.backoff = {Millis(1000)};
  p.backoff_cap = kRunEvery;
  runner->Add(kEventRetentionStage, std::make_unique<EventRetentionStage>(deps), p);
}

}  // namespace msgx
