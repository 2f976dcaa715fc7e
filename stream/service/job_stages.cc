#include "stream/service/job_stages.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <utility>

#include "base/log.h"
#include "base/metrics.h"
#include "stream/jobs/daily_sweep.h"
#include "stream/jobs/event_retention.h"
#include "stream/jobs/mailbox_marks.h"
#include "stream/jobs/proc_state_archive.h"
#include "stream/jobs/proc_state_hst_retention.h"
#include "stream/jobs/processed_mark.h"
#include "stream/pg/pg_session.h"

namespace msgx {
namespace {

constexpr Millis kRunEvery{60'000};

// A run every minute, or every half `age` when that is shorter (at least
// every second): a row is never kept much past the age it is due at.
Millis RunEvery(Millis age) { return std::clamp(age / 2, Millis(1000), kRunEvery); }
constexpr int kBatch = 1000;
constexpr std::int64_t kBacklogCap = 1'000'000;

// The metrics every job has, labelled {job_name="<name>"} (times in seconds
// since the epoch).
struct JobMetrics {
  explicit JobMetrics(const std::string& job) {
    Metrics& m = Metrics::Global();
    const Labels l = {{"job_name", job}};
    rows = m.GetCounter("msgx_job_rows_total", "Rows a job has done", l);
    backlog = m.GetGauge("msgx_job_backlog", "Rows due for a job", l);
    last_run = m.GetGauge("msgx_job_last_run_seconds", "When a job's last run ended", l);
    next_run = m.GetGauge("msgx_job_next_run_seconds", "When a job's next run starts", l);
  }
  static double Seconds(MicrosSinceEpoch t) { return static_cast<double>(t) / 1e6; }

  // A run's ends, in the stage's figures and the gauges.
  void SetLastRun(MicrosSinceEpoch t) {
    last_run_micros = t;
    last_run->Set(Seconds(t));
  }
  void SetNextRun(MicrosSinceEpoch t) {
    next_run_micros = t;
    next_run->Set(Seconds(t));
  }
  // Ends a run at `now`: the stage waits `every` for the next one.
  StepOutcome EndRun(MicrosSinceEpoch now, Millis every) {
    SetLastRun(now);
    SetNextRun(now + every.count() * 1000);
    return StepOutcome::WaitUntil(next_run_micros, "next run");
  }
  // The figures every job ends with.
  void AppendRunFigures(StageFigures* out) const {
    out->emplace_back("last_run_micros", last_run_micros.load());
    out->emplace_back("next_run_micros", next_run_micros.load());
  }

  Counter* rows;
  Gauge* backlog;
  Gauge* last_run;
  Gauge* next_run;
  std::atomic<std::int64_t> last_run_micros{0};
  std::atomic<std::int64_t> next_run_micros{0};
};

// A run is a sequence of batches until one is short; then the stage waits
// for the next run. `Job` is EventRetention, ProcStateArchive or
// ProcStateHstRetention: built from
// (PgSession*, const Clock*, JobOptions), with Result<int> Step(epoch) (the
// rows one batch did) and Result<std::int64_t> Backlog(cap).
template <typename Job, typename JobOptions>
class BatchJobStage final : public Stage {
 public:
  BatchJobStage(const JobDeps& d, const std::string& name, Millis every, JobOptions options)
      : pg_(d.config->postgres_url),
        job_(&pg_, d.clock, std::move(options)),
        leader_(d.leader),
        clock_(d.clock),
        every_(every),
        m_(name) {}

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
    backlog_ = 0;
    m_.backlog->Set(0);
    return m_.EndRun(clock_->NowMicros(), every_);
  }

  void Figures(StageFigures* out) const override {
    out->emplace_back("rows", done_.load());
    out->emplace_back("backlog", backlog_.load());
    m_.AppendRunFigures(out);
  }

 private:
  PgSession pg_;
  Job job_;
  LeadershipKeeper* leader_;
  const Clock* clock_;
  const Millis every_;
  JobMetrics m_;
  bool in_run_ = false;
  std::atomic<std::int64_t> done_{0};
  std::atomic<std::int64_t> backlog_{0};
};

std::unique_ptr<Stage> EventRetentionStage(const JobDeps& d) {
  EventRetentionOptions o;
  o.log_uuid = d.log_uuid;
  o.retention = d.config->pipeline.event_retention;
  o.batch = kBatch;
  return std::make_unique<BatchJobStage<EventRetention, EventRetentionOptions>>(
      d, "event-retention", RunEvery(o.retention), std::move(o));
}

std::unique_ptr<Stage> ProcStateArchiveStage(const JobDeps& d) {
  ProcStateArchiveOptions o;
  o.log_uuid = d.log_uuid;
  o.archive_after = d.config->proc_state_archive_after;
  o.batch = kBatch;
  return std::make_unique<BatchJobStage<ProcStateArchive, ProcStateArchiveOptions>>(
      d, "proc-state-archive", RunEvery(o.archive_after), std::move(o));
}

std::unique_ptr<Stage> ProcStateHstRetentionStage(const JobDeps& d) {
  ProcStateHstRetentionOptions o;
  o.log_uuid = d.log_uuid;
  o.retention = d.config->proc_state_hst_retention;
  o.batch = kBatch;
  return std::make_unique<BatchJobStage<ProcStateHstRetention, ProcStateHstRetentionOptions>>(
      d, "proc-state-hst-retention", RunEvery(o.retention), std::move(o));
}

// A run (every pipeline.backfill-backoff-ms) first counts the backlog, the
// overdue rows (logged at WARN) and the open abandon list, then settles
// batches until one is short. A refused mark stalls the stage, which the
// runner backs off by ProcessedMarkPolicy; the next attempt counts again.
class ProcessedMarkStage final : public Stage {
 public:
  ProcessedMarkStage(const JobDeps& d, std::unique_ptr<MailboxMarks> marks)
      : pg_(d.config->postgres_url),
        mailbox_(std::move(marks)),
        job_(&pg_, mailbox_.get(), d.clock, Options(d)),
        leader_(d.leader),
        clock_(d.clock),
        every_(ProcessedMarkPolicy(*d.config).idle_wait),
        overdue_after_(d.config->pipeline.overdue_backfill),
        m_("processed-mark") {
    Metrics& m = Metrics::Global();
    const Labels l = {{"job_name", "processed-mark"}};
    m_abandoned_ = m.GetGauge("msgx_job_abandoned", "Rows on a job's open abandon list", l);
    m_overdue_ = m.GetGauge("msgx_job_overdue", "Rows a job has not done past their due time", l);
  }

  StepOutcome Step() override {
    if (!in_run_) {
      auto c = job_.Count(kBacklogCap);
      if (!c.ok()) return StepOutcome::FromStatus(c.status());
      backlog_ = c->backlog;
      overdue_ = c->overdue;
      abandoned_ = c->abandoned;
      m_.backlog->Set(static_cast<double>(c->backlog));
      m_overdue_->Set(static_cast<double>(c->overdue));
      m_abandoned_->Set(static_cast<double>(c->abandoned));
      if (c->overdue > 0) {
        Logger(kProcessedMarkStage)
            ->warn(
                "{} processed mark(s) overdue: not written {} s after the outcome "
                "(pipeline.overdue-backfill); the oldest is msg_id {}",
                c->overdue, overdue_after_.count() / 1000, c->oldest_overdue);
      }
      in_run_ = true;
    }
    auto r = job_.Step(leader_->epoch());
    if (!r.ok()) {
      in_run_ = false;  // the retry counts again, and warns again if overdue
      return StepOutcome::FromStatus(r.status());
    }
    const int settled = r->marked + r->elsewhere + r->abandoned;
    done_ += settled;
    m_.rows->Add(settled);
    abandoned_ += r->abandoned;
    m_abandoned_->Set(static_cast<double>(abandoned_.load()));
    backlog_ = std::max<std::int64_t>(0, backlog_ - settled);
    m_.backlog->Set(static_cast<double>(backlog_));
    if (r->taken >= kBatch && settled > 0) return StepOutcome::Progressed();
    in_run_ = false;
    return m_.EndRun(clock_->NowMicros(), every_);
  }

  void Figures(StageFigures* out) const override {
    out->emplace_back("rows", done_.load());
    out->emplace_back("backlog", backlog_.load());
    out->emplace_back("overdue", overdue_.load());
    out->emplace_back("abandoned", abandoned_.load());
    m_.AppendRunFigures(out);
  }

 private:
  static ProcessedMarkOptions Options(const JobDeps& d) {
    ProcessedMarkOptions o;
    o.log_uuid = d.log_uuid;
    o.status = d.config->mailbox_processed_status;
    o.overdue = d.config->pipeline.overdue_backfill;
    o.batch = kBatch;
    return o;
  }

  PgSession pg_;
  std::unique_ptr<MailboxMarks> mailbox_;
  ProcessedMark job_;
  LeadershipKeeper* leader_;
  const Clock* clock_;
  const Millis every_;
  const Millis overdue_after_;
  JobMetrics m_;
  Gauge* m_abandoned_;
  Gauge* m_overdue_;
  bool in_run_ = false;
  std::atomic<std::int64_t> done_{0};
  std::atomic<std::int64_t> backlog_{0};
  std::atomic<std::int64_t> overdue_{0};
  std::atomic<std::int64_t> abandoned_{0};
};

// Waits for the day's time, appends the day's commands, waits for the next
// day's.
class DailySweepStage final : public Stage {
 public:
  DailySweepStage(const JobDeps& d, int at_minutes)
      : job_(d.log, d.zone, d.clock, at_minutes, *d.settings),
        appended_(d.appended),
        m_("daily-sweep"),
        clock_(d.clock) {}

  StepOutcome Step() override {
    auto r = job_.Step();
    if (!r.ok()) return StepOutcome::FromStatus(r.status());
    day_ = r->day;
    m_.SetNextRun(r->next_at);
    if (r->appended) {
      ++runs_;
      m_.rows->Add(2);
      m_.SetLastRun(clock_->NowMicros());
      if (appended_) appended_();
    }
    return StepOutcome::WaitUntil(r->next_at, "next run");
  }

  void Figures(StageFigures* out) const override {
    out->emplace_back("runs", runs_.load());
    out->emplace_back("day", day_.load());
    m_.AppendRunFigures(out);
  }

 private:
  DailySweep job_;
  std::function<void()> appended_;
  JobMetrics m_;
  const Clock* clock_;
  std::atomic<std::int64_t> runs_{0};
  std::atomic<std::int64_t> day_{0};
};

}  // namespace

StagePolicy ProcessedMarkPolicy(const Config& c) {
  StagePolicy p;
  p.needs_leadership = true;
  p.idle_wait = c.pipeline.backfill_backoff;
  p.backoff = {c.pipeline.backfill_backoff};
  p.backoff_cap = c.pipeline.backfill_backoff_cap;
  return p;
}

Status AddJobStages(const JobDeps& deps, StageRunner* runner) {
  StagePolicy p;
  p.needs_leadership = true;
  p.idle_wait = RunEvery(deps.config->pipeline.event_retention);
  p.backoff = {Millis(1000)};
  p.backoff_cap = kRunEvery;
  runner->Add(kEventRetentionStage, EventRetentionStage(deps), p);
  StagePolicy archive = p;
  archive.idle_wait = RunEvery(deps.config->proc_state_archive_after);
  runner->Add(kProcStateArchiveStage, ProcStateArchiveStage(deps), archive);
  if (deps.config->proc_state_hst_retention.count() > 0) {
    StagePolicy retention = p;
    retention.idle_wait = RunEvery(deps.config->proc_state_hst_retention);
    runner->Add(kProcStateHstRetentionStage, ProcStateHstRetentionStage(deps), retention);
  }
  if (!deps.config->mailbox_url.empty()) {
    auto marks = MakeMailboxMarks(*deps.config);
    if (!marks.ok()) return marks.status();
    runner->Add(kProcessedMarkStage,
                std::make_unique<ProcessedMarkStage>(deps, std::move(marks).value()),
                ProcessedMarkPolicy(*deps.config));
  }
  if (deps.config->history_sweep_at == "off") return Status::Ok();
  auto at = ParseTimeOfDay(deps.config->history_sweep_at);
  if (!at.ok()) return at.status();
  StagePolicy daily = p;
  daily.idle_wait = kRunEvery;
  runner->Add(kDailySweepStage, std::make_unique<DailySweepStage>(deps, *at), daily);
  return Status::Ok();
}

Status AppendDueSweep(const JobDeps& deps) {
  if (deps.config->history_sweep_at == "off") return Status::Ok();
  auto at = ParseTimeOfDay(deps.config->history_sweep_at);
  if (!at.ok()) return at.status();
  DailySweep job(deps.log, deps.zone, deps.clock, *at, *deps.settings);
  auto r = job.Step();
  if (!r.ok()) return r.status();
  if (r->appended) Logger("jobs")->info("daily sweep of {} appended at start-up", r->day);
  return Status::Ok();
}

}  // namespace msgx
