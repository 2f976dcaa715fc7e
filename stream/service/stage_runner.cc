#include "stream/service/stage_runner.h"

#include <algorithm>
#include <exception>

#include "base/backoff.h"
#include "base/fatal_report.h"
#include "base/log.h"

namespace msgx {

bool SystemStageWaiter::WaitUntil(Stopper* wake, MicrosSinceEpoch deadline) {
  const MicrosSinceEpoch left = std::max<MicrosSinceEpoch>(deadline - clock_->NowMicros(), 0);
  // Rounded up, so a wait never ends just before its deadline.
  return wake->WaitFor(std::chrono::milliseconds((left + 999) / 1000));
}

std::string_view StageStateName(StageState s) {
  switch (s) {
    case StageState::kStarting:
      return "starting";
    case StageState::kRunning:
      return "running";
    case StageState::kIdle:
      return "idle";
    case StageState::kWaiting:
      return "waiting";
    case StageState::kStalled:
      return "stalled";
    case StageState::kNotLeading:
      return "not-leading";
    case StageState::kFailed:
      return "failed";
    case StageState::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::string_view ThreadNameOf(std::string_view stage_name) {
  const std::size_t space = stage_name.rfind(' ');
  return space == std::string_view::npos ? stage_name : stage_name.substr(space + 1);
}

StepOutcome StepOutcome::FromStatus(const Status& s) {
  if (s.ok()) return Progressed();
  if (s.error_class() == ErrorClass::kInfra) return Stalled(s.ToString());
  return Failed(s.ToString());
}

struct StageRunner::Entry {
  std::unique_ptr<Stage> stage;
  StagePolicy policy;
  bool on_caller_thread = false;
  Stopper wake;
  std::atomic<std::int64_t> steps{0};
  std::atomic<std::int64_t> stalls{0};
  std::atomic<std::int64_t> step_micros{0};
  std::atomic<std::int64_t> step_started{-1};  // monotonic micros while in Step(), else -1
  std::atomic<bool> ended{false};              // the loop has returned
  std::atomic<bool> drained{false};            // it ended drained
  mutable std::mutex mu;
  StageHealth health;  // name, state, reason, since: guarded by mu
  Counter* m_steps = nullptr;
  Counter* m_stalls = nullptr;
  Counter* m_seconds = nullptr;
  Gauge* m_stalled = nullptr;
  Gauge* m_failed = nullptr;
};

StageRunner::StageRunner(Options options) : options_(std::move(options)) {
  if (options_.metrics == nullptr) options_.metrics = &Metrics::Global();
}

StageRunner::~StageRunner() { Stop(); }

void StageRunner::PublishLag() const {
  for (const auto& e : entries_) {
    StageFigures figures;
    e->stage->Figures(&figures);
    for (const auto& [key, value] : figures) {
      if (key != "lag" || value < 0) continue;
      options_.metrics
          ->GetGauge("msgx_stage_lag_records", "Records waiting for a stage",
                     {{"stage", e->health.name}})
          ->Set(static_cast<double>(value));
    }
  }
}

void StageRunner::Add(std::string name, std::unique_ptr<Stage> stage, StagePolicy policy,
                      bool on_caller_thread) {
  auto e = std::make_unique<Entry>();
  e->stage = std::move(stage);
  e->policy = std::move(policy);
  e->on_caller_thread = on_caller_thread;
  e->health.name = name;
  e->health.needs_leadership = e->policy.needs_leadership;
  e->health.since_micros = options_.clock->NowMicros();
  const Labels l = {{"stage", name}};
  Metrics& m = *options_.metrics;
  e->m_steps = m.GetCounter("msgx_stage_steps_total", "Steps a stage has taken", l);
  e->m_stalls = m.GetCounter("msgx_stage_stalls_total", "Outage stalls a stage has begun", l);
  e->m_seconds =
      m.GetCounter("msgx_stage_step_seconds_total", "Time a stage has spent in its steps", l);
  e->m_stalled = m.GetGauge("msgx_stage_stalled", "1 while a stage is stalled on an outage", l);
  e->m_failed = m.GetGauge("msgx_stage_failed", "1 once a stage has stopped on a bug", l);
  if (options_.service != nullptr) options_.service->Link(&e->wake);
  entries_.push_back(std::move(e));
}

void StageRunner::Start() {
  lag_hook_ = options_.metrics->AddScrapeHook([this] { PublishLag(); });
  for (auto& e : entries_) {
    if (e->on_caller_thread) continue;
    threads_.emplace_back([this, raw = e.get()] {
      BeginMsgxThread(ThreadNameOf(raw->health.name));
      Loop(raw);
    });
  }
}

void StageRunner::Run(std::string_view name) {
  if (Entry* e = Find(name)) Loop(e);
}

void StageRunner::Wake(std::string_view name) {
  if (Entry* e = Find(name)) e->wake.Notify();
}

void StageRunner::Stop() {
  if (lag_hook_ >= 0) {
    options_.metrics->RemoveScrapeHook(lag_hook_);
    lag_hook_ = -1;
  }
  for (auto& e : entries_) e->wake.Stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

StageRunner::Entry* StageRunner::Find(std::string_view name) const {
  for (const auto& e : entries_) {
    if (e->health.name == name) return e.get();  // the name never changes
  }
  return nullptr;
}

void StageRunner::SetState(Entry* e, StageState s, std::string reason) {
  std::lock_guard<std::mutex> lock(e->mu);
  if (e->health.state != s) e->health.since_micros = options_.clock->NowMicros();
  e->health.state = s;
  e->health.reason = std::move(reason);
}

void StageRunner::Loop(Entry* e) {
  Steps(e);
  e->ended = true;
  // A stage downstream of this one may drain now: wake every stage.
  for (auto& other : entries_) other->wake.Notify();
  if (options_.ended != nullptr) options_.ended->Notify();
}

bool StageRunner::DrainTimedOut() const {
  return draining_.load() && options_.clock->MonotonicMicros() >= drain_deadline_.load();
}

bool StageRunner::UpstreamEnded(const Entry* e) const {
  for (const auto& other : entries_) {
    if (other->policy.drain_order < e->policy.drain_order && !other->ended.load()) return false;
  }
  return true;
}

MicrosSinceEpoch StageRunner::CutAtDrainBound(MicrosSinceEpoch t) const {
  if (!draining_.load()) return t;
  const Clock* clock = options_.clock;
  const std::int64_t left =
      std::max<std::int64_t>(drain_deadline_.load() - clock->MonotonicMicros(), 0);
  return std::min(t, clock->NowMicros() + left);
}

void StageRunner::Steps(Entry* e) {
  const std::string& name = e->health.name;
  const StagePolicy& p = e->policy;
  const Clock* clock = options_.clock;
  int failures = 0;  // consecutive stalled steps
  auto wait_until = [&](MicrosSinceEpoch t) {
    return options_.waiter->WaitUntil(&e->wake, CutAtDrainBound(t));
  };
  auto idle_deadline = [&] { return clock->NowMicros() + p.idle_wait.count() * 1000; };
  // Ends a stage of drain_order >= 0 that did not drain, saying what held it.
  auto undrained = [&](const std::string& why) {
    std::string was;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      was = std::string(StageStateName(e->health.state));
      if (!e->health.reason.empty()) was += ": " + e->health.reason;
    }
    SetState(e, StageState::kStopped, "undrained (" + why + ", was " + was + ")");
  };
  while (!e->wake.stopped()) {
    // Whether this step can drain the stage: read before it begins, so
    // that it sees everything the stages upstream left.
    bool can_drain = false;
    if (draining_.load()) {
      if (DrainTimedOut()) return undrained("the drain bound passed");
      can_drain = UpstreamEnded(e);
    }
    if (p.needs_leadership && options_.leading && !options_.leading()) {
      // Nothing to drain here: whoever leads writes it.
      if (draining_.load()) return undrained("not leading");
      SetState(e, StageState::kNotLeading, "not leading");
      if (!wait_until(idle_deadline())) break;
      continue;
    }
    StepOutcome r;
    const std::int64_t t0 = clock->MonotonicMicros();
    e->step_started = t0;
    try {
      r = e->stage->Step();
    } catch (const std::exception& ex) {
      r = StepOutcome::Failed(std::string("exception: ") + ex.what());
    } catch (...) {
      r = StepOutcome::Failed("unknown exception");
    }
    e->step_started = -1;
    const std::int64_t spent = clock->MonotonicMicros() - t0;
    e->steps.fetch_add(1);
    e->step_micros.fetch_add(spent);
    e->m_steps->Add(1);
    e->m_seconds->AddSeconds(static_cast<double>(spent) / 1e6);
    if (r.kind != StepOutcome::Kind::kStalled && r.kind != StepOutcome::Kind::kFailed &&
        failures > 0) {
      Logger(name)->info("resumed after {} stalled steps", failures);
      failures = 0;
      e->m_stalled->Set(0);
    }
    switch (r.kind) {
      case StepOutcome::Kind::kProgressed:
        SetState(e, StageState::kRunning, "");
        continue;
      case StepOutcome::Kind::kIdle:
        if (can_drain && p.drain_order >= 0) {
          e->drained = true;
          SetState(e, StageState::kStopped, "drained");
          return;
        }
        SetState(e, StageState::kIdle, "");
        if (!wait_until(idle_deadline())) break;
        continue;
      case StepOutcome::Kind::kWaitUntil:
        SetState(e, StageState::kWaiting, r.reason);
        if (r.until_micros > clock->NowMicros() && !wait_until(r.until_micros)) break;
        continue;
      case StepOutcome::Kind::kStalled: {
        if (failures++ == 0) {
          Logger(name)->warn("stalled: {}", r.reason);
          e->stalls.fetch_add(1);
          e->m_stalls->Add(1);
          e->m_stalled->Set(1);
        }
        SetState(e, StageState::kStalled, r.reason);
        if (p.needs_leadership && options_.leader_stalled) options_.leader_stalled(r.reason);
        const Millis d = BackoffDelay(p.backoff, p.backoff_cap, failures);
        if (!wait_until(clock->NowMicros() + d.count() * 1000)) break;
        continue;
      }
      case StepOutcome::Kind::kFailed:
        Logger(name)->error("ALARM: {} stopped: {}", name, r.reason);
        SetState(e, StageState::kFailed, r.reason);
        e->m_failed->Set(1);
        failed_ = true;
        return;
    }
    break;  // a wait ended because the stage was stopped
  }
  if (draining_.load() && p.drain_order >= 0) return undrained("stopped");
  SetState(e, StageState::kStopped, "");
}

void StageRunner::BeginDrain(Millis bound) {
  if (draining_.load()) return;
  drain_deadline_ = options_.clock->MonotonicMicros() + bound.count() * 1000;
  draining_ = true;
  for (auto& e : entries_) {
    if (e->policy.drain_order < 0) {
      e->wake.Stop();
    } else {
      e->wake.Notify();
    }
  }
}

bool StageRunner::AllEnded() const {
  return std::all_of(entries_.begin(), entries_.end(),
                     [](const auto& e) { return e->ended.load(); });
}

std::vector<std::string> StageRunner::Undrained() const {
  std::vector<std::string> out;
  for (const auto& e : entries_) {
    if (e->policy.drain_order < 0 || e->drained.load()) continue;
    std::lock_guard<std::mutex> lock(e->mu);
    if (e->health.state == StageState::kStopped) {
      out.push_back(e->health.name + " " + e->health.reason);  // "undrained (…)"
      continue;
    }
    std::string s = e->health.name + " (" + std::string(StageStateName(e->health.state));
    if (!e->health.reason.empty()) s += ": " + e->health.reason;
    out.push_back(s + ")");
  }
  return out;
}

std::vector<std::string> StageRunner::Stuck(Millis limit) const {
  std::vector<std::string> out;
  const std::int64_t now = options_.clock->MonotonicMicros();
  for (const auto& e : entries_) {
    const std::int64_t started = e->step_started.load();
    if (started >= 0 && now - started > limit.count() * 1000) out.push_back(e->health.name);
  }
  return out;
}

std::vector<StageHealth> StageRunner::Health() const {
  std::vector<StageHealth> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) {
    StageHealth h;
    {
      std::lock_guard<std::mutex> lock(e->mu);
      h = e->health;
    }
    h.steps = e->steps.load();
    h.stalls = e->stalls.load();
    h.step_micros = e->step_micros.load();
    e->stage->Figures(&h.figures);
    out.push_back(std::move(h));
  }
  return out;
}

std::vector<std::string> StageRunner::Problems() const {
  std::vector<std::string> out;
  for (const StageHealth& h : Health()) {
    switch (h.state) {
      case StageState::kStalled:
      case StageState::kFailed:
        out.push_back(h.name + " " + std::string(StageStateName(h.state)) + ": " + h.reason);
        break;
      case StageState::kNotLeading:
        out.push_back(h.name + ": not leading");
        break;
      default:
        break;
    }
  }
  return out;
}

}  // namespace msgx
