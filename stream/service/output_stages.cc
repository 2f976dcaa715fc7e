#include "stream/service/output_stages.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <iterator>
#include <memory>
#include <optional>
#include <vector>

#include "base/log.h"
#include "base/metrics.h"
#include "state/redis_client.h"
#include "state/redis_mirror.h"
#include "stream/apply/pg_applier.h"
#include "stream/dispatch/dispatcher.h"
#include "stream/dispatch/kafka_publisher.h"
#include "stream/mirror/mirror_worker.h"
#include "stream/pg/pg_session.h"
#include "stream/service/count_cadence.h"

namespace msgx {
namespace {

constexpr const char* kTargets[] = {"KAFKA:msg", "KAFKA:schd", "KAFKA:ref"};
constexpr std::int64_t kPruneEveryMicros = 60'000'000;
constexpr std::int64_t kCountEveryMicros = 1'000'000;
// A dispatcher's outbox count takes at most about 1/50 of its time.
constexpr std::int64_t kCountCostRatio = 50;
// The drain (StageRunner::BeginDrain): the fold (order 0) first, then the
// mirror and the applier, which write what it folded, then the
// dispatchers, which send what the applier put in the outbox once the
// mirror has it.
constexpr int kOutputDrainOrder = 1;
constexpr int kDispatchDrainOrder = 2;

// The "lag" figure of a stage at `offset`: records the fold has made that
// the stage has not written (none when the state store cannot be read).
void AppendLag(const StateStore& store, std::int64_t offset, StageFigures* out) {
  auto meta = store.ReadMeta();
  if (meta.ok()) out->emplace_back("lag", std::max<std::int64_t>(0, meta->applied_offset - offset));
}

std::string DispatchStageName(const std::string& target) { return "dispatch " + target; }

// Which dispatchers wait for the mirror. A dispatcher's flag is up from the
// start of each of its steps until one ends other than gated, so the mirror
// wakes only the dispatchers whose head it may free, and cannot miss one:
// the flag is up while the gate is read. Without it every mirrored batch
// woke all three dispatchers for a head read that found nothing to send
// (docs/dispatch.md#who-wakes-a-dispatcher).
struct MirrorWaiters {
  std::array<std::atomic<bool>, std::size(kTargets)> waiting{};

  static std::size_t IndexOf(const std::string& target) {
    for (std::size_t i = 0; i < std::size(kTargets); ++i) {
      if (target == kTargets[i]) return i;
    }
    return 0;  // cannot happen: the stages are built from kTargets
  }
  void WakeWaiting(StageRunner* runner) const {
    std::size_t i = 0;
    for (const char* target : kTargets) {
      if (waiting[i++].load()) runner->Wake(DispatchStageName(target));
    }
  }
};

class MirrorStage final : public Stage {
 public:
  MirrorStage(std::unique_ptr<RedisClient> client, const OutputDeps& d,
              std::shared_ptr<const MirrorWaiters> waiters, StageRunner* runner)
      : client_(std::move(client)),
        waiters_(std::move(waiters)),
        mirror_(client_.get(), d.log_uuid),
        worker_(&mirror_, d.store, d.zone),
        store_(d.store),
        runner_(runner),
        leader_(d.leader) {}

  StepOutcome Step() override {
    mirror_.set_epoch(leader_->epoch());
    auto step = worker_.Step();
    if (!step.ok()) return StepOutcome::FromStatus(step.status());
    switch (step->kind) {
      case MirrorStep::Kind::kApplied:
      case MirrorStep::Kind::kRebuilt:
        offset_ = step->offset;
        known_ = true;
        waiters_->WakeWaiting(runner_);
        return StepOutcome::Progressed();
      case MirrorStep::Kind::kIdle:
        offset_ = step->offset;
        known_ = true;
        return StepOutcome::Idle();
      case MirrorStep::Kind::kPaused:
        return StepOutcome::Idle();
      case MirrorStep::Kind::kStalled:
        return StepOutcome::Stalled(step->error);
    }
    return StepOutcome::Failed("mirror: unknown step kind");
  }
  void Figures(StageFigures* out) const override {
    out->emplace_back("offset", offset_.load());
    if (known_) AppendLag(*store_, offset_.load(), out);
  }
  const std::atomic<std::int64_t>* OffsetCell() const { return &offset_; }

 private:
  std::unique_ptr<RedisClient> client_;
  std::shared_ptr<const MirrorWaiters> waiters_;
  RedisMirror mirror_;
  MirrorWorker worker_;
  const StateStore* store_;
  StageRunner* runner_;
  LeadershipKeeper* leader_;
  std::atomic<std::int64_t> offset_{-1};
  std::atomic<bool> known_{false};  // offset_ was read from Redis
};

class ApplierStage final : public Stage {
 public:
  // `mirror_offset`: the mirror stage's offset, or null without a mirror.
  ApplierStage(const OutputDeps& d, const std::atomic<std::int64_t>* mirror_offset,
               StageRunner* runner)
      : d_(d),
        pg_(d.config->postgres_url),
        applier_(&pg_, d.store, Options(d)),
        mirror_offset_(mirror_offset),
        runner_(runner),
        last_prune_(d.clock->MonotonicMicros() - kPruneEveryMicros) {}

  StepOutcome Step() override {
    applier_.set_epoch(d_.leader->epoch());
    auto step = applier_.Step();
    if (!step.ok()) return StepOutcome::FromStatus(step.status());
    if (step->kind == ApplyStep::Kind::kStalled) return StepOutcome::Stalled(step->error);
    offset_ = applier_.pg_offset();
    known_ = true;
    // Only the dispatchers whose outbox the batch wrote to
    // (docs/dispatch.md#who-wakes-a-dispatcher).
    for (const std::string& target : step->event_targets) {
      runner_->Wake(DispatchStageName(target));
    }
    Prune();
    if (StepOutcome shown = ShowFailedHead(); shown.kind != StepOutcome::Kind::kIdle) {
      return shown;
    }
    // Caught up with the fold: the next fold commit wakes the applier.
    return step->kind == ApplyStep::Kind::kApplied && !step->caught_up ? StepOutcome::Progressed()
                                                                       : StepOutcome::Idle();
  }
  void Figures(StageFigures* out) const override {
    out->emplace_back("offset", offset_.load());
    if (known_) AppendLag(*d_.store, offset_.load(), out);
  }

 private:
  static ApplierOptions Options(const OutputDeps& d) {
    ApplierOptions o;
    o.log_uuid = d.log_uuid;
    return o;
  }
  // Seed mode's held head, once per post (after the pending batches, so
  // that PostgreSQL shows it behind what the fold applied before it).
  StepOutcome ShowFailedHead() {
    if (d_.failed_heads == nullptr) return StepOutcome::Idle();
    std::optional<FailedHead> head = d_.failed_heads->Read();
    if (!head || head == shown_) return StepOutcome::Idle();
    Status s = applier_.ShowFailedHead(*head);
    if (s.error_class() == ErrorClass::kInfra) return StepOutcome::Stalled(s.ToString());
    if (!s.ok()) return StepOutcome::FromStatus(s);
    shown_ = std::move(head);
    return StepOutcome::Progressed();
  }

  // Pending batches applied here and mirrored, and older than the
  // retention, are dropped from the state store once a minute.
  void Prune() {
    const std::int64_t now = d_.clock->MonotonicMicros();
    if (now - last_prune_ < kPruneEveryMicros) return;
    last_prune_ = now;
    std::int64_t upto = applier_.pg_offset();
    if (mirror_offset_ != nullptr) upto = std::min<std::int64_t>(upto, mirror_offset_->load());
    const MicrosSinceEpoch before =
        d_.clock->NowMicros() - d_.config->pipeline.pending_retention.count() * 1000;
    auto pruned = d_.store->PrunePending(upto, before);
    if (!pruned.ok()) {
      Logger(kApplierStage)->warn("pruning pending batches: {}", pruned.status().ToString());
    } else if (*pruned > 0) {
      Logger(kApplierStage)->info("pruned {} pending batches up to offset {}", *pruned, upto);
    }
  }

  OutputDeps d_;
  PgSession pg_;
  PgApplier applier_;
  const std::atomic<std::int64_t>* mirror_offset_;
  StageRunner* runner_;
  std::int64_t last_prune_;
  std::optional<FailedHead> shown_;  // the last held head written
  std::atomic<std::int64_t> offset_{-1};
  std::atomic<bool> known_{false};  // offset_ was read from PostgreSQL
};

class DispatchStage final : public Stage {
 public:
  DispatchStage(const OutputDeps& d, const std::string& target,
                std::unique_ptr<KafkaPublisher> publisher, std::unique_ptr<RedisClient> redis,
                std::shared_ptr<MirrorWaiters> waiters)
      : waiters_(std::move(waiters)),
        waiting_(&waiters_->waiting[MirrorWaiters::IndexOf(target)]),
        publisher_(std::move(publisher)),
        redis_(std::move(redis)),
        gate_(redis_.get(), d.log_uuid),
        pg_(d.config->postgres_url),
        clock_(d.clock),
        poll_micros_(d.config->pipeline.poll_interval.count() * 1000),
        dispatcher_(
            &pg_, publisher_.get(),
            [this, uuid = d.log_uuid]() -> Result<std::int64_t> {
              auto p = gate_.Position();
              if (!p.ok()) return p.status();
              if (!p->initialized || p->log_uuid != uuid) return std::int64_t{-1};
              return p->offset;
            },
            d.clock, Options(d, target)),
        leader_(d.leader),
        pending_gauge_(Metrics::Global().GetGauge(
            "msgx_outbox_pending", "Outbox rows waiting to be sent", {{"target", target}})),
        dead_gauge_(Metrics::Global().GetGauge(
            "msgx_outbox_dead", "Outbox rows DEAD (the dead-letter queue)", {{"target", target}})) {
  }

  StepOutcome Step() override {
    dispatcher_.set_epoch(leader_->epoch());
    waiting_->store(true);  // up while the gate is read (MirrorWaiters)
    auto step = dispatcher_.Step();
    waiting_->store(step.ok() && step->kind == DispatchStep::Kind::kGated);
    if (!step.ok()) return StepOutcome::FromStatus(step.status());
    sent_ = dispatcher_.sent_total();
    dead_ = dispatcher_.dead_total();
    Count();
    switch (step->kind) {
      case DispatchStep::Kind::kSent:
        // Drained: what the outbox gets next comes with a wake.
        return step->drained ? StepOutcome::Idle() : StepOutcome::Progressed();
      case DispatchStep::Kind::kCharged:
        return StepOutcome::Progressed();
      case DispatchStep::Kind::kIdle:
        return StepOutcome::Idle();
      case DispatchStep::Kind::kGated:
        // Not idle: its events wait for the mirror (which wakes it when it
        // moves), so a drain does not count it drained.
        return StepOutcome::WaitUntil(clock_->NowMicros() + poll_micros_, "the mirror gate");
      case DispatchStep::Kind::kWaitingHead:
        return StepOutcome::WaitUntil(step->until_micros, "head event backing off");
      case DispatchStep::Kind::kBatching:
        return StepOutcome::WaitUntil(clock_->NowMicros() + step->retry_after.count() * 1000,
                                      "collecting a schedule batch");
      case DispatchStep::Kind::kStalled:
        return StepOutcome::Stalled(step->error);
    }
    return StepOutcome::Failed("dispatch: unknown step kind");
  }
  void Figures(StageFigures* out) const override {
    out->emplace_back("sent", sent_.load());
    out->emplace_back("dead", dead_.load());
    // A dispatcher's records are its target's outbox rows.
    if (const std::int64_t pending = pending_.load(); pending >= 0) {
      out->emplace_back("pending", pending);
      out->emplace_back("lag", pending);
    }
  }

 private:
  // The target's PENDING and DEAD rows when the cadence says so
  // (stream/service/count_cadence.h): at most once a second, less often
  // when a count takes long (a backlog). A failed count keeps the last
  // figures: the step reports the outage.
  void Count() {
    const std::int64_t started = clock_->MonotonicMicros();
    if (!count_cadence_.Due(started)) return;
    auto c = dispatcher_.CountOutbox();
    count_cadence_.Counted(started, clock_->MonotonicMicros());
    if (!c.ok()) return;
    pending_ = c->pending;
    pending_gauge_->Set(static_cast<double>(c->pending));
    dead_gauge_->Set(static_cast<double>(c->dead));
  }

  static DispatcherOptions Options(const OutputDeps& d, const std::string& target) {
    // Fenced by the leader's epoch; progress keyed by the log and target.
    return DispatcherOptions::ForTarget(*d.config, target, d.log_uuid);
  }

  std::shared_ptr<MirrorWaiters> waiters_;
  std::atomic<bool>* waiting_;  // this target's flag in *waiters_
  std::unique_ptr<KafkaPublisher> publisher_;
  std::unique_ptr<RedisClient> redis_;
  RedisMirror gate_;
  PgSession pg_;
  Clock* clock_;
  std::int64_t poll_micros_;
  Dispatcher dispatcher_;
  LeadershipKeeper* leader_;
  Gauge* pending_gauge_;
  Gauge* dead_gauge_;
  CountCadence count_cadence_{kCountEveryMicros, kCountCostRatio};
  std::atomic<std::int64_t> sent_{0};
  std::atomic<std::int64_t> dead_{0};
  std::atomic<std::int64_t> pending_{-1};  // -1: not counted yet
};

}  // namespace

Status AddOutputStages(const OutputDeps& deps, StageRunner* runner) {
  auto lg = Logger("run");
  const Config& c = *deps.config;
  const bool redis = !c.redis_url.empty();
  const bool pg = !c.postgres_url.empty();
  const bool kafka = !c.kafka_bootstrap_servers.empty() && redis && pg;
  // Everything is built before anything is added, so a configuration error
  // adds nothing.
  std::vector<std::pair<std::string, std::unique_ptr<DispatchStage>>> dispatchers;
  auto waiters = std::make_shared<MirrorWaiters>();
  if (kafka) {
    for (const char* target : kTargets) {
      auto p = KafkaPublisher::Create(KafkaPublisherOptions::FromConfig(
          c, "msgx-" + deps.log_uuid + "-" + std::string(target).substr(6)));
      if (!p.ok()) return p.status();
      auto r = RedisClient::Create(c.redis_url);
      if (!r.ok()) return r.status();
      dispatchers.emplace_back(target,
                               std::make_unique<DispatchStage>(deps, target, std::move(p.value()),
                                                               std::move(r.value()), waiters));
    }
  } else {
    lg->warn("kafka.bootstrap-servers (or redis.url/postgres.url) not configured: no dispatch");
  }
  std::unique_ptr<MirrorStage> mirror;
  if (redis) {
    auto r = RedisClient::Create(c.redis_url);
    if (!r.ok()) return r.status();
    mirror = std::make_unique<MirrorStage>(std::move(r.value()), deps, waiters, runner);
  } else {
    lg->warn("redis.url is not configured: no mirror");
  }
  if (pg) {
    const std::atomic<std::int64_t>* mirror_offset = mirror ? mirror->OffsetCell() : nullptr;
    runner->Add(kApplierStage, std::make_unique<ApplierStage>(deps, mirror_offset, runner),
                StagePolicy::Polling(c.pipeline.poll_interval, true, kOutputDrainOrder));
  }
  // Only the leader writes Redis: a second process on a copy of the state
  // directory must not overwrite the leader's mirror.
  if (mirror)
    runner->Add(kMirrorStage, std::move(mirror),
                StagePolicy::Polling(c.pipeline.poll_interval, true, kOutputDrainOrder));
  for (auto& [target, stage] : dispatchers) {
    // Outages back off like event retries (docs/configuration.md#backoff).
    StagePolicy p = StagePolicy::Polling(c.pipeline.poll_interval, true, kDispatchDrainOrder);
    p.backoff = c.pipeline.backoff;
    p.backoff_cap = c.pipeline.backoff_cap;
    runner->Add(DispatchStageName(target), std::move(stage), p);
  }
  return Status::Ok();
}

}  // namespace msgx
