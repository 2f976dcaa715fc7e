#include "stream/service/output_stages.h"

#include <algorithm>
#include <chrono>

#include "base/backoff.h"
#include "base/log.h"
#include "state/redis_client.h"
#include "state/redis_mirror.h"
#include "stream/apply/pg_applier.h"
#include "stream/dispatch/dispatcher.h"
#include "stream/dispatch/kafka_publisher.h"
#include "stream/mirror/mirror_worker.h"
#include "stream/pg/pg_session.h"

namespace msgx::app {
namespace {

using std::chrono::milliseconds;

constexpr const char* kTargets[] = {"KAFKA:msg", "KAFKA:schd", "KAFKA:ref"};
constexpr milliseconds kMaxBackoff{30'000};
constexpr milliseconds kPruneEvery{60'000};

milliseconds StallBackoff(milliseconds poll, int failures) {
  return std::min<milliseconds>(poll * (1LL << std::min(failures, 10)), kMaxBackoff);
}

// Logs the start and the end of a stall once each.
void MarkStalled(StageHealth* h, bool stalled, const std::string& why) {
  const bool was = h->stalled.exchange(stalled);
  if (stalled && !was) Logger(h->name)->warn("stalled: {}", why);
  if (!stalled && was) Logger(h->name)->info("resumed");
}

}  // namespace

struct OutputStages::Publishers {
  std::vector<std::pair<std::string, std::unique_ptr<KafkaPublisher>>> by_target;
};

OutputStages::~OutputStages() { Stop(); }

StageHealth* OutputStages::AddHealth(const std::string& name) {
  health_.push_back(std::make_unique<StageHealth>());
  health_.back()->name = name;
  return health_.back().get();
}

Result<std::unique_ptr<OutputStages>> OutputStages::Start(const Deps& deps) {
  auto lg = Logger("run");
  std::unique_ptr<OutputStages> s(new OutputStages());
  s->deps_ = deps;
  s->publishers_ = std::make_unique<Publishers>();
  const Config& c = *deps.config;
  const bool redis = !c.redis_url.empty();
  const bool kafka = !c.kafka_bootstrap_servers.empty() && redis && !c.postgres_url.empty();
  if (kafka) {
    for (const char* target : kTargets) {
      auto p = KafkaPublisher::Create(KafkaPublisherOptions::FromConfig(
          c, "msgx-" + deps.log_uuid + "-" + std::string(target).substr(6)));
      if (!p.ok()) return p.status();
      s->publishers_->by_target.emplace_back(target, std::move(p.value()));
    }
  } else {
    lg->warn("kafka.bootstrap-servers (or redis.url/postgres.url) not configured: no dispatch");
  }
  // Every stage's health and wake-up exist before the first thread starts:
  // the threads read both lists (pruning, notifying the dispatchers).
  StageHealth* applier = nullptr;
  std::vector<StageHealth*> dispatchers;
  if (redis) {
    s->mirror_health_ = s->AddHealth("mirror");
  } else {
    lg->warn("redis.url is not configured: no mirror");
  }
  if (!c.postgres_url.empty()) applier = s->AddHealth("applier");
  for (const auto& [target, publisher] : s->publishers_->by_target) {
    dispatchers.push_back(s->AddHealth("dispatch " + target));
    s->dispatch_wakes_.push_back(std::make_unique<Stopper>());
  }
  if (StageHealth* h = s->mirror_health_) {
    s->threads_.emplace_back([raw = s.get(), h] { raw->RunMirror(h); });
  }
  if (applier != nullptr) {
    s->threads_.emplace_back([raw = s.get(), h = applier] { raw->RunApplier(h); });
  }
  for (std::size_t i = 0; i < dispatchers.size(); ++i) {
    s->threads_.emplace_back([raw = s.get(), t = s->publishers_->by_target[i].first,
                              h = dispatchers[i]] { raw->RunDispatcher(t, h); });
  }
  return s;
}

void OutputStages::Folded() {
  mirror_wake_.Notify();
  applier_wake_.Notify();
}

void OutputStages::Stop() {
  mirror_wake_.Stop();
  applier_wake_.Stop();
  for (auto& w : dispatch_wakes_) w->Stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

std::vector<std::string> OutputStages::Problems() const {
  std::vector<std::string> out;
  for (const auto& h : health_) {
    if (h->stalled) out.push_back(h->name + " stalled");
  }
  return out;
}

void OutputStages::RunMirror(StageHealth* h) {
  const Config& c = *deps_.config;
  auto fail = [&](const Status& s) {
    Logger("mirror")->error("mirror stopped: {}", s.ToString());
    h->fatal = true;
    deps_.service->Stop();
  };
  auto client = RedisClient::Create(c.redis_url);
  if (!client.ok()) return fail(client.status());
  RedisMirror mirror(client->get(), deps_.log_uuid);
  MirrorWorker worker(&mirror, deps_.store, deps_.zone);
  int failures = 0;
  while (!mirror_wake_.stopped()) {
    auto step = worker.Step();
    if (!step.ok()) return fail(step.status());
    switch (step->kind) {
      case MirrorStep::Kind::kApplied:
      case MirrorStep::Kind::kRebuilt:
        failures = 0;
        MarkStalled(h, false, "");
        h->position = step->offset;
        for (auto& w : dispatch_wakes_) w->Notify();
        continue;
      case MirrorStep::Kind::kIdle:
        failures = 0;
        MarkStalled(h, false, "");
        h->position = step->offset;
        mirror_wake_.WaitFor(c.pipeline.poll_interval);
        break;
      case MirrorStep::Kind::kPaused:
        mirror_wake_.WaitFor(c.pipeline.poll_interval);
        break;
      case MirrorStep::Kind::kStalled:
        MarkStalled(h, true, step->error);
        mirror_wake_.WaitFor(StallBackoff(c.pipeline.poll_interval, ++failures));
        break;
    }
  }
}

void OutputStages::RunApplier(StageHealth* h) {
  const Config& c = *deps_.config;
  PgSession pg(c.postgres_url);
  ApplierOptions options;
  options.log_uuid = deps_.log_uuid;
  PgApplier applier(&pg, deps_.store, options);
  int failures = 0;
  auto last_prune = std::chrono::steady_clock::now() - kPruneEvery;
  while (!applier_wake_.stopped()) {
    const std::int64_t epoch = deps_.leader->epoch();
    if (epoch == 0) {
      applier_wake_.WaitFor(c.pipeline.poll_interval);
      continue;
    }
    applier.set_epoch(epoch);
    auto step = applier.Step();
    if (!step.ok()) {
      Logger("applier")->error("ALARM: applier stopped: {}", step.status().ToString());
      h->fatal = true;
      deps_.service->Stop();
      return;
    }
    if (step->kind == ApplyStep::Kind::kStalled) {
      MarkStalled(h, true, step->error);
      applier_wake_.WaitFor(StallBackoff(c.pipeline.poll_interval, ++failures));
      continue;
    }
    failures = 0;
    MarkStalled(h, false, "");
    h->position = applier.pg_offset();
    if (step->kind == ApplyStep::Kind::kApplied) {
      for (auto& w : dispatch_wakes_) w->Notify();
    }
    const auto now = std::chrono::steady_clock::now();
    if (now - last_prune >= kPruneEvery) {
      last_prune = now;
      std::int64_t upto = applier.pg_offset();
      if (mirror_health_ != nullptr) upto = std::min<std::int64_t>(upto, mirror_health_->position);
      const MicrosSinceEpoch before =
          SystemClock::Default()->NowMicros() - c.pipeline.pending_retention.count() * 1000;
      auto pruned = deps_.store->PrunePending(upto, before);
      if (!pruned.ok()) {
        Logger("applier")->warn("pruning pending batches: {}", pruned.status().ToString());
      } else if (*pruned > 0) {
        Logger("applier")->info("pruned {} pending batches up to offset {}", *pruned, upto);
      }
    }
    if (step->kind == ApplyStep::Kind::kIdle) applier_wake_.WaitFor(c.pipeline.poll_interval);
  }
}

void OutputStages::RunDispatcher(const std::string& target, StageHealth* h) {
  const Config& c = *deps_.config;
  Stopper* wake = nullptr;
  Publisher* publisher = nullptr;
  for (std::size_t i = 0; i < publishers_->by_target.size(); ++i) {
    if (publishers_->by_target[i].first == target) {
      wake = dispatch_wakes_[i].get();
      publisher = publishers_->by_target[i].second.get();
    }
  }
  auto fail = [&](const Status& s) {
    Logger("dispatch")->error("ALARM: dispatcher {} stopped: {}", target, s.ToString());
    h->fatal = true;
    deps_.service->Stop();
  };
  auto client = RedisClient::Create(c.redis_url);
  if (!client.ok()) return fail(client.status());
  RedisMirror gate(client->get(), deps_.log_uuid);
  const std::string uuid = deps_.log_uuid;
  PgSession pg(c.postgres_url);
  Dispatcher dispatcher(
      &pg, publisher,
      [&gate, uuid]() -> Result<std::int64_t> {
        auto p = gate.Position();
        if (!p.ok()) return p.status();
        if (!p->initialized || p->log_uuid != uuid) return std::int64_t{-1};
        return p->offset;
      },
      SystemClock::Default(), DispatcherOptions::ForTarget(c, target));
  const milliseconds poll = c.pipeline.poll_interval;
  while (!wake->stopped()) {
    if (deps_.leader->epoch() == 0) {
      wake->WaitFor(poll);
      continue;
    }
    auto step = dispatcher.Step();
    if (!step.ok()) return fail(step.status());
    h->position = dispatcher.sent_total();
    h->dead = dispatcher.dead_total();
    switch (step->kind) {
      case DispatchStep::Kind::kSent:
      case DispatchStep::Kind::kCharged:
        MarkStalled(h, false, "");
        continue;
      case DispatchStep::Kind::kIdle:
      case DispatchStep::Kind::kGated:
        MarkStalled(h, false, "");
        wake->WaitFor(poll);
        break;
      case DispatchStep::Kind::kWaitingHead: {
        const MicrosSinceEpoch wait = step->until_micros - SystemClock::Default()->NowMicros();
        wake->WaitFor(std::clamp(milliseconds(wait / 1000), milliseconds(1), poll));
        break;
      }
      case DispatchStep::Kind::kBatching:
        wake->WaitFor(std::clamp(step->retry_after, milliseconds(1), poll));
        break;
      case DispatchStep::Kind::kStalled:
        MarkStalled(h, true, step->error);
        wake->WaitFor(step->retry_after);
        break;
    }
  }
}

}  // namespace msgx::app
