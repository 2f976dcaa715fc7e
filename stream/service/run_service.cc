#include "stream/service/run_service.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/backoff.h"
#include "base/fatal_report.h"
#include "base/file_lock.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/service_notify.h"
#include "base/stopper.h"
#include "base/watchdog.h"
#include "codecs/sis_decoder.h"
#include "codecs/time_zone.h"
#include "state/digest.h"
#include "state/log_cursor.h"
#include "state/log_store.h"
#include "state/state_store.h"
#include "stream/capture/capture.h"
#include "stream/capture/command_intake.h"
#include "stream/capture/mailbox_factory.h"
#include "stream/capture/mailbox_ingest.h"
#include "stream/fold/crash_guard.h"
#include "stream/fold/crash_poison.h"
#include "stream/fold/fold.h"
#include "stream/fold/head_retry.h"
#include "stream/fold/log_fold_source.h"
#include "stream/fold/settings_record.h"
#include "stream/fold/sis_fold_decoder.h"
#include "stream/pg/leadership_keeper.h"
#include "stream/service/fold_stage.h"
#include "stream/service/http_server.h"
#include "stream/service/input_stages.h"
#include "stream/service/job_stages.h"
#include "stream/service/output_stages.h"
#include "stream/service/rebuild_fetcher.h"
#include "stream/service/rebuild_gate.h"
#include "stream/service/stage_runner.h"
#include "stream/service/status_model.h"
#include "stream/service/store_memory_gauges.h"

namespace msgx {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCaptureStage = "capture";
constexpr const char* kIntakeStage = "intake";
constexpr const char* kFoldStage = "fold";
constexpr Millis kStartRetry{500};
constexpr Millis kStartRetryCap{30'000};

// What HTTP reads from the first second on: the start-up phase until the
// stages run, then the runner. The pointers are set only while what they
// point to is alive (ClearOnExit).
class Startup {
 public:
  void SetPhase(std::string phase) {
    std::lock_guard<std::mutex> lock(mu_);
    phase_ = std::move(phase);
  }
  std::string Phase() const {
    std::lock_guard<std::mutex> lock(mu_);
    return phase_;
  }
  std::atomic<StageRunner*> runner{nullptr};
  std::atomic<LeadershipKeeper*> keeper{nullptr};
  std::atomic<bool> draining{false};  // SIGTERM came: /readyz says "draining"

 private:
  mutable std::mutex mu_;
  std::string phase_ = "starting";  // guarded by mu_
};

// Resets an atomic pointer when it goes out of scope (before what it points
// to, when declared after it).
template <typename T>
class ClearOnExit {
 public:
  explicit ClearOnExit(std::atomic<T*>* p) : p_(p) {}
  ~ClearOnExit() { p_->store(nullptr); }
  ClearOnExit(const ClearOnExit&) = delete;
  ClearOnExit& operator=(const ClearOnExit&) = delete;

 private:
  std::atomic<T*>* p_;
};

// Waits for the state.dir lock, saying once who holds it.
std::unique_ptr<FileLock> AcquireStateDirLock(const std::string& path, Stopper* stopper,
                                              Startup* startup) {
  bool said = false;
  while (!stopper->stopped()) {
    auto lock = FileLock::TryAcquire(path);
    if (lock.ok()) {
      if (said) Logger("run")->info("state.dir lock acquired");
      return std::move(lock.value());
    }
    if (!said) {
      Logger("run")->warn("waiting for the state.dir lock: {}", lock.status().message());
      startup->SetPhase("waiting for the state.dir lock: " + lock.status().message());
      said = true;
    }
    stopper->WaitFor(kStartRetry);
  }
  return nullptr;
}

// RocksDB cannot open a store on a full disk without aborting the process
// (an assertion of the Debian build, in its error path): so start-up waits
// until state.dir has the reserve free (docs/operations.md#error-classes),
// saying so in /readyz. False when stopped.
bool WaitForFreeSpace(const DiskReserve& reserve, Stopper* stopper, Startup* startup) {
  for (int attempt = 1;; ++attempt) {
    const Status free = reserve.Check();
    if (free.ok()) return true;
    const std::string why = "waiting for free space to open the stores: " + free.message();
    if (attempt == 1) Logger("run")->warn("{}", why);
    startup->SetPhase(why);
    if (!stopper->WaitFor(BackoffDelay({kStartRetry}, kStartRetryCap, attempt))) return false;
  }
}

// Opens a store, waiting out an outage (a full disk, an I/O error) with
// the one backoff rule and saying so in /readyz; a damaged store is an error
// at once (logged). Not OK when stopped or on that error.
template <typename Open>
auto OpenRetrying(const char* what, Stopper* stopper, Startup* startup, const Open& open)
    -> decltype(open()) {
  for (int attempt = 1;; ++attempt) {
    auto r = open();
    if (r.ok()) return r;
    if (r.status().error_class() != ErrorClass::kInfra) {
      Logger("run")->error("{}: {}", what, r.status().ToString());
      return r;
    }
    if (attempt == 1) {
      Logger("run")->warn("{}: {} (retrying)", what, r.status().ToString());
    }
    startup->SetPhase(std::string("opening the ") + what + ": " + r.status().message());
    if (!stopper->WaitFor(BackoffDelay({kStartRetry}, kStartRetryCap, attempt))) return r;
  }
}

// Pings systemd's watchdog (WatchdogSec=, base/watchdog.h) from a thread of
// its own, from READY=1 until Stop(): at start-up always (its waits are
// said in /readyz), then while `alive` says so.
class WatchdogLoop {
 public:
  WatchdogLoop(const Clock* clock, std::function<bool()> alive)
      : pinger_(WatchdogInterval(), clock, [] { NotifyWatchdog(); }) {
    if (!pinger_.enabled()) return;
    thread_ = std::thread([this, alive = std::move(alive)] {
      do {
        pinger_.Tick(alive());
      } while (stop_.WaitFor(pinger_.UntilDue()));
    });
  }
  ~WatchdogLoop() { Stop(); }
  WatchdogLoop(const WatchdogLoop&) = delete;
  WatchdogLoop& operator=(const WatchdogLoop&) = delete;
  void Stop() {
    stop_.Stop();
    if (thread_.joinable()) thread_.join();
  }

 private:
  WatchdogPinger pinger_;
  Stopper stop_;
  std::thread thread_;
};

// The drain after the first SIGTERM (docs/operations.md#stopping): /readyz
// turns 503 "draining", capture and intake stop, the fold, mirror, applier
// and dispatchers finish what is committed, within config's bound. Returns
// when every stage has ended or `hard` stopped (a second signal, a foreign
// log), saying what was left. `ended` is notified as stages end.
void Drain(const Config& config, Startup* startup, StageRunner* runner, Stopper* ended,
           const Stopper& hard) {
  auto lg = Logger("run");
  startup->draining = true;
  NotifyStatus("draining");
  const std::int64_t t0 = SystemClock::Default()->MonotonicMicros();
  lg->info(
      "draining for at most {} ms: capture and intake stop, the outputs finish what is "
      "committed",
      config.shutdown_drain_timeout.count());
  runner->BeginDrain(config.shutdown_drain_timeout);
  while (!runner->AllEnded() && ended->WaitFor(std::chrono::milliseconds(1000))) {
    // Woken as each stage ends; the stages keep the bound themselves.
  }
  const std::vector<std::string> left = runner->Undrained();
  std::string list;
  for (const auto& l : left) list += (list.empty() ? "" : "; ") + l;
  if (hard.stopped()) {
    lg->warn("stopped at once during the drain; left undrained (resumed at the next start): {}",
             list.empty() ? "nothing" : list);
  } else if (!left.empty()) {
    lg->warn("the drain bound of {} ms passed; left undrained (resumed at the next start): {}",
             config.shutdown_drain_timeout.count(), list);
  } else {
    lg->info("drained in {} ms", (SystemClock::Default()->MonotonicMicros() - t0 + 999) / 1000);
  }
}

}  // namespace

int RunService(const Config& config) {
  auto lg = Logger("run");
  // The first signal asks for the stop (start-up gives up, a running
  // service drains); a second one, or a foreign log, stops at once.
  Stopper stop_requested;
  Stopper stopper;
  stopper.Link(&stop_requested);
  StopOnTerminationSignals(&stop_requested, &stopper);
  Clock* clock = SystemClock::Default();

  // The decision settings this configuration asks for (recorded in the log
  // once it is open), and the zone and decoder of POST /cminmsgs/send and
  // the outputs, from the same TZif bytes; the fold's come from the log.
  auto settings = DecisionSettings::FromConfig(config);
  if (!settings.ok()) {
    lg->error("{}", settings.status().ToString());
    return 2;
  }
  auto tz = TimeZone::FromTzif(settings->zone_name, settings->zone_tzif);
  if (!tz.ok()) {
    lg->error("{}", tz.status().ToString());
    return 2;
  }
  sis::DecoderOptions decoder_options;
  decoder_options.max_bytes = config.codec_max_bytes;
  const sis::SisDecoder sis_decoder(*tz, decoder_options);
  const TimeZoneAirportZone zone(*tz);

  // HTTP first: /healthz answers from the first second, and /readyz says
  // what start-up waits for (the state.dir lock, leadership, PostgreSQL).
  Startup startup;
  std::unique_ptr<MailboxIngest> ingest;
  if (!config.mailbox_url.empty()) {
    ingest = std::make_unique<MailboxIngest>(config, &sis_decoder, clock);
  }
  auto live = [&startup] {
    LiveStatus l;
    if (LeadershipKeeper* k = startup.keeper.load()) {
      l.leader_epoch = k->epoch();
      l.leading = l.leader_epoch > 0;
      l.waiting = k->waiting();
    }
    if (StageRunner* r = startup.runner.load()) {
      l.stages = r->Health();
    } else {
      l.leading = false;
      if (l.waiting.empty()) l.waiting = startup.Phase();
    }
    return l;
  };
  HttpEndpoints endpoints;
  endpoints.ingest = ingest.get();
  endpoints.readiness = [&startup, &config] {
    Readiness r;
    if (startup.draining.load()) r.problems.emplace_back("draining");
    StageRunner* runner = startup.runner.load();
    LeadershipKeeper* keeper = startup.keeper.load();
    if (runner != nullptr) {
      for (auto& p : runner->Problems()) r.problems.push_back(std::move(p));
    } else if (keeper == nullptr || keeper->epoch() > 0) {
      r.problems.push_back(startup.Phase());
    }
    if (config.mailbox_url.empty()) r.problems.emplace_back("mailbox.url not configured");
    if (keeper != nullptr && keeper->epoch() == 0) {
      r.problems.push_back("not leading: " + keeper->waiting());
    }
    r.ready = r.problems.empty();
    return r;
  };
  endpoints.status_json = [&config, live] {
    const LiveStatus l = live();
    return ToJson(BuildStatus(config, &l));
  };
  auto http = HttpServer::Start(config.http_listen, std::move(endpoints));
  if (!http.ok()) {
    lg->error("{}", http.status().ToString());
    return 2;
  }
  // The unit is Type=notify: ready once HTTP serves, so waiting for the
  // state.dir lock, leadership or a rebuild is not cut by the start timeout.
  NotifyReady();
  NotifyStatus("http on port " + std::to_string((*http)->port()) + ", starting");
  // From READY=1 on, systemd's watchdog (if any) wants pings; a runner
  // stuck in one step for the whole interval gets none and is restarted.
  const auto watchdog_limit = std::chrono::duration_cast<Millis>(WatchdogInterval());
  auto runner_alive = [&startup, watchdog_limit, said = false]() mutable {
    StageRunner* r = startup.runner.load();
    if (r == nullptr) return true;
    const std::vector<std::string> stuck = r->Stuck(watchdog_limit);
    if (!stuck.empty() && !said) {
      Logger("run")->error(
          "ALARM: {} in one step for more than {} ms: the watchdog is no "
          "longer pinged",
          stuck.front(), watchdog_limit.count());
    }
    said = !stuck.empty();
    return stuck.empty();
  };
  WatchdogLoop watchdog(clock, std::move(runner_alive));

  std::error_code ec;
  fs::create_directories(config.state_dir, ec);
  if (ec) {
    lg->error("state.dir {}: {}", config.state_dir, ec.message());
    return 2;
  }
  auto dir_lock = AcquireStateDirLock(config.state_dir + "/LOCK.msgx", &stop_requested, &startup);
  if (!dir_lock) return 0;  // stopped while waiting

  // Before the stores that check it; outlives them.
  const DiskReserve reserve(config.state_dir, static_cast<std::uintmax_t>(config.state_min_free_mb)
                                                  << 20);
  if (!WaitForFreeSpace(reserve, &stop_requested, &startup)) return 0;
  startup.SetPhase("opening the stores");
  auto log = OpenRetrying("log store", &stop_requested, &startup,
                          [&] { return LogStore::Open(config.state_dir + "/log", clock); });
  if (!log.ok()) return stop_requested.stopped() ? 0 : 1;
  (*log)->set_reserve(&reserve);
  auto store = OpenRetrying("state store", &stop_requested, &startup, [&] {
    StateStore::Options options;
    options.reserve = &reserve;
    return StateStore::Open(config.state_dir + "/state", options);
  });
  if (!store.ok()) return stop_requested.stopped() ? 0 : 1;
  LogStore* log_store = log->get();
  const StoreMemoryGauges store_memory(&Metrics::Global(), log_store, store->get());
  // The log says which decision settings are in force before anything else
  // is folded (docs/fold.md#settings-in-the-log).
  for (;;) {
    auto recorded = RecordSettings(*settings, log_store);
    if (recorded.ok()) break;
    if (recorded.status().error_class() != ErrorClass::kInfra) {
      lg->error("recording the settings: {}", recorded.status().ToString());
      return 1;
    }
    lg->warn("recording the settings: {} (retrying)", recorded.status().ToString());
    startup.SetPhase("recording the settings: " + recorded.status().message());
    if (!stop_requested.WaitFor(kStartRetry)) return 0;
  }
  // One cursor for the fold's reads: this thread's until the fold's thread
  // starts, then that thread's alone (docs/fold.md#reading-the-log).
  std::shared_ptr<LogCursor> cursor = log_store->NewCursor();
  LogFoldSource source(
      LogScanFn([cursor](std::uint64_t from, std::size_t max, const LogVisitor& each) {
        return cursor->Scan(from, max, each);
      }),
      [log_store] { return log_store->CommandIndex(); });
  if (Status s = source.BuildQuarantineIndex(); !s.ok()) {
    lg->error("quarantine index: {}", s.ToString());
    return 1;
  }
  // The PostgreSQL half of the single-writer rule: one attempt now (a
  // foreign log stops the service here), then the keeper's thread. Capture
  // and the fold do not wait for it (docs/operations.md#standby); a rebuild
  // waits for PostgreSQL's batch digests inside the fold stage
  // (stream/service/rebuild_gate.h).
  std::unique_ptr<LeadershipKeeper> keeper;
  const ClearOnExit<LeadershipKeeper> keeper_view(&startup.keeper);
  std::atomic<RebuildFetcher*> fetcher_view{nullptr};  // set while the fetcher lives
  RebuildGate::Options gate_options;
  gate_options.marker_path = config.state_dir + "/rebuild-until";
  if (config.postgres_url.empty()) {
    lg->warn("postgres.url is not configured: outcomes and events stay in the state store");
  } else {
    keeper = std::make_unique<LeadershipKeeper>(config.postgres_url, (*log)->log_uuid(), &stopper);
    startup.keeper = keeper.get();
    if (Status s = keeper->TryFirst(); !s.ok()) {
      lg->error("{}", s.ToString());
      return 2;
    }
    gate_options.load = [&fetcher_view]() -> Result<RebuildCheck> {
      RebuildFetcher* f = fetcher_view.load();
      if (f == nullptr) return Status::Infra("PostgreSQL's fold_batch not read yet");
      return f->Take();
    };
  }
  RebuildGate rebuild_gate(std::move(gate_options));
  startup.SetPhase("starting the stages");
  Fold fold(store->get(), nullptr, &source, FoldOptions::FromConfig(config, *settings));
  if (Status s = fold.Open(); !s.ok()) {
    lg->error("fold: {}", s.ToString());
    return s.error_class() == ErrorClass::kConfig ? 2 : 1;
  }

  // Crash poison, then the guard for this run.
  const std::string deaths = config.state_dir + "/crash-deaths";
  auto quarantined = QuarantineRepeatedDeaths(deaths, fold.applied_offset(), log_store, source);
  if (!quarantined.ok()) {
    lg->error("crash poison: {}", quarantined.status().ToString());
    return 1;
  }
  if (*quarantined > 0) {
    if (Status s = source.BuildQuarantineIndex(); !s.ok()) {
      lg->error("quarantine index: {}", s.ToString());
      return 1;
    }
  }
  if (Status s = CrashGuard::Install(deaths); !s.ok()) {
    lg->error("crash guard: {}", s.ToString());
    return 1;
  }

  // The stages, all driven by one runner.
  SystemStageWaiter waiter(clock);
  Stopper stage_ended;  // notified as each stage's loop ends (the drain waits on it)
  stopper.Link(&stage_ended);
  StageRunner::Options ro;
  ro.clock = clock;
  ro.waiter = &waiter;
  ro.service = &stopper;
  ro.ended = &stage_ended;
  if (keeper) {
    ro.leading = [k = keeper.get()] { return k->epoch() > 0; };
    ro.leader_stalled = [k = keeper.get()](std::string_view why) { k->StepDownIfStale(why); };
  }
  StageRunner runner(ro);
  // After the runner, so it goes first: its thread wakes the fold.
  std::unique_ptr<RebuildFetcher> fetcher;
  const ClearOnExit<RebuildFetcher> fetcher_clear(&fetcher_view);
  if (keeper) {
    fetcher = std::make_unique<RebuildFetcher>(config.postgres_url, "main", fold.applied_offset(),
                                               kStartRetry, [&] { runner.Wake(kFoldStage); });
    fetcher_view = fetcher.get();
  }

  std::unique_ptr<Mailbox> mailbox;
  std::unique_ptr<Capture> capture;
  if (config.mailbox_url.empty()) {
    lg->warn("mailbox.url is not configured: nothing is captured");
  } else {
    auto made = MakeMailbox(config, clock);
    if (!made.ok()) {
      lg->error("mailbox: {}", made.status().ToString());
      return 1;
    }
    mailbox = std::move(made).value();
    auto c = Capture::Create(log_store, mailbox.get(), clock, CaptureOptions::FromConfig(config));
    if (!c.ok()) {
      lg->error("capture: {}", c.status().ToString());
      return 1;
    }
    capture = std::move(c.value());
    runner.Add(
        kCaptureStage,
        std::make_unique<CaptureStage>(
            capture.get(), [&] { runner.Wake(kFoldStage); },
            PollCadence(config.capture_busy_poll_interval, config.pipeline.poll_interval), clock),
        StagePolicy::Polling(config.pipeline.poll_interval, false));
  }
  std::unique_ptr<CommandIntake> intake;
  if (config.postgres_url.empty()) {
    lg->warn("postgres.url is not configured: msgx_command is not read");
  } else {
    intake = std::make_unique<CommandIntake>(config.postgres_url, log_store);
    // Intake marks msgx_command rows: only the leader may (docs/commit-protocol.md).
    runner.Add(kIntakeStage,
               std::make_unique<IntakeStage>(intake.get(), [&] { runner.Wake(kFoldStage); }),
               StagePolicy::Polling(config.pipeline.poll_interval, true));
  }
  HeadRetry head_retry(config.pipeline, clock, config.state_dir + "/seed-head");
  FoldStage::Deps fd;
  fd.fold = &fold;
  fd.source = &source;
  fd.log = log_store;
  fd.store = store->get();
  fd.head_retry = &head_retry;
  FailedHeadBoard failed_heads;
  fd.failed_heads = &failed_heads;
  fd.head_failed = [&] { runner.Wake(kApplierStage); };
  fd.rebuild = keeper ? &rebuild_gate : nullptr;
  fd.batch_max = static_cast<std::size_t>(config.pipeline.batch_max);
  fd.reserve = &reserve;
  fd.folded = [&] {
    runner.Wake(kMirrorStage);
    runner.Wake(kApplierStage);
  };
  auto fold_stage = std::make_unique<FoldStage>(fd);
  const FoldStage* fold_view = fold_stage.get();
  // The first to drain (order 0): the outputs drain after it.
  runner.Add(kFoldStage, std::move(fold_stage),
             StagePolicy::Polling(config.pipeline.poll_interval, false, 0));
  if (keeper) {
    OutputDeps deps;
    deps.config = &config;
    deps.store = store->get();
    deps.zone = &zone;
    deps.log_uuid = log_store->log_uuid();
    deps.leader = keeper.get();
    deps.clock = clock;
    deps.failed_heads = &failed_heads;
    if (Status s = AddOutputStages(deps, &runner); !s.ok()) {
      lg->error("{}", s.ToString());
      return s.error_class() == ErrorClass::kConfig ? 2 : 1;
    }
    JobDeps jobs;
    jobs.config = &config;
    jobs.log_uuid = log_store->log_uuid();
    jobs.leader = keeper.get();
    jobs.clock = clock;
    jobs.log = log_store;
    jobs.zone = &zone;
    jobs.settings = &*settings;
    jobs.appended = [&runner] { runner.Wake(kFoldStage); };
    if (Status s = AddJobStages(jobs, &runner); !s.ok()) {
      lg->error("{}", s.ToString());
      return 2;
    }
    // The day's sweep before capture appends anything, when this process
    // leads; otherwise (or on an outage) the stage appends it later.
    if (keeper->epoch() > 0) {
      if (Status s = AppendDueSweep(jobs); !s.ok()) {
        lg->warn("daily sweep at start-up: {} (the stage retries)", s.ToString());
      }
    }
  }

  lg->info("msgx run: log {} at offset {}, applied {}, http on port {}", log_store->log_uuid(),
           log_store->next_offset(), fold.applied_offset(), (*http)->port());
  NotifyStatus("running: http on port " + std::to_string((*http)->port()));

  // The leadership keeper and every stage on a thread of its own; this one
  // waits for the stop. A foreign log found later (PostgreSQL was down at
  // start-up) stops the service at once with the same exit status as at
  // start-up.
  std::atomic<int> keeper_exit{0};
  std::thread keeper_thread;
  if (keeper) {
    keeper_thread = std::thread([&] {
      BeginMsgxThread("leadership");
      if (Status s = keeper->Run(); !s.ok()) {
        lg->error("ALARM: leadership stopped: {}", s.ToString());
        keeper_exit = s.error_class() == ErrorClass::kConfig ? 2 : 1;
        stopper.Stop();
      }
    });
  }
  startup.runner = &runner;
  const ClearOnExit<StageRunner> runner_view(&startup.runner);
  runner.Start();
  // A stage that fails stops alone; the others go on until SIGTERM.
  while (stop_requested.WaitFor(std::chrono::milliseconds(60'000))) {
    // Nothing to do until then: the stages, the keeper and HTTP run alone.
  }
  NotifyStopping();
  if (!stopper.stopped()) Drain(config, &startup, &runner, &stage_ended, stopper);
  runner.Stop();
  stopper.Stop();   // the keeper
  watchdog.Stop();  // before the runner it reads goes away
  if (keeper_thread.joinable()) keeper_thread.join();
  http->reset();  // before the runner and the keeper it reads go away
  lg->info("msgx run stopped: applied offset {}, digest {}", fold_view->applied_offset(),
           ToHex(fold.digest()).substr(0, 16));
  if (keeper_exit != 0) return keeper_exit;
  return runner.ExitStatus();
}

}  // namespace msgx
