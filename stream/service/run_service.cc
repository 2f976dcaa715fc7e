#include "stream/service/run_service.h"

#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <filesystem>
#include <optional>
#include <thread>

#include "base/file_lock.h"
#include "base/log.h"
#include "base/metrics.h"
#include "base/stopper.h"
#include "codecs/sis_decoder.h"
#include "codecs/time_zone.h"
#include "state/digest.h"
#include "state/log_store.h"
#include "state/state_store.h"
#include "stream/apply/rebuild_check.h"
#include "stream/capture/capture.h"
#include "stream/capture/command_intake.h"
#include "stream/capture/mailbox_ingest.h"
#include "stream/capture/pg_mailbox.h"
#include "stream/fold/crash_guard.h"
#include "stream/fold/crash_poison.h"
#include "stream/fold/fold.h"
#include "stream/fold/head_retry.h"
#include "stream/fold/log_fold_source.h"
#include "stream/fold/sis_fold_decoder.h"
#include "stream/pg/leadership_keeper.h"
#include "stream/service/http_server.h"
#include "stream/service/output_stages.h"
#include "stream/service/poll_loop.h"

namespace msgx::app {
namespace {

namespace fs = std::filesystem;

// Waits for the state.dir lock, saying once who holds it.
std::unique_ptr<FileLock> AcquireStateDirLock(const std::string& path, Stopper* stopper) {
  bool said = false;
  while (!stopper->stopped()) {
    auto lock = FileLock::TryAcquire(path);
    if (lock.ok()) {
      if (said) Logger("run")->info("state.dir lock acquired");
      return std::move(lock.value());
    }
    if (!said) {
      Logger("run")->warn("waiting for the state.dir lock: {}", lock.status().message());
      said = true;
    }
    stopper->WaitFor(std::chrono::milliseconds(500));
  }
  return nullptr;
}

bool HasQuarantine(const std::vector<FoldInput>& batch) {
  for (const auto& r : batch) {
    if (r.command && std::holds_alternative<QuarantineCommand>(*r.command)) return true;
  }
  return false;
}

}  // namespace

int RunService(const Config& config) {
  auto lg = Logger("run");
  Stopper stopper;
  // The fold's own wake-up: capture and intake notify it when they append.
  // (On the shared stopper, a notifier waiting on it could consume its own
  // notification and leave the fold asleep for a whole poll interval.)
  Stopper fold_wake;
  stopper.Link(&fold_wake);
  StopOnTerminationSignals(&stopper);

  std::error_code ec;
  fs::create_directories(config.state_dir, ec);
  if (ec) {
    lg->error("state.dir {}: {}", config.state_dir, ec.message());
    return 2;
  }
  auto dir_lock = AcquireStateDirLock(config.state_dir + "/LOCK.msgx", &stopper);
  if (!dir_lock) return 0;  // stopped while waiting

  auto log = LogStore::Open(config.state_dir + "/log", SystemClock::Default());
  if (!log.ok()) {
    lg->error("log store: {}", log.status().ToString());
    return 1;
  }
  auto store = StateStore::Open(config.state_dir + "/state", {});
  if (!store.ok()) {
    lg->error("state store: {}", store.status().ToString());
    return 1;
  }
  auto tz = TimeZone::Load(config.airport_timezone);
  if (!tz.ok()) {
    lg->error("{}", tz.status().ToString());
    return 2;
  }
  sis::DecoderOptions decoder_options;
  decoder_options.max_bytes = config.codec_max_bytes;
  const sis::SisDecoder sis_decoder(*tz, decoder_options);
  const SisFoldDecoder decoder(sis_decoder);
  const TimeZoneAirportZone zone(*tz);
  LogStore* log_store = log->get();
  LogFoldSource source(
      [log_store](std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
        return log_store->Read(from, max, out);
      });
  if (Status s = source.BuildQuarantineIndex(); !s.ok()) {
    lg->error("quarantine index: {}", s.ToString());
    return 1;
  }
  // The PostgreSQL half of the single-writer rule, then what PostgreSQL
  // already holds: a state store behind it is being rebuilt, and the fold
  // cuts its batches where PostgreSQL's end, to compare digests there.
  std::unique_ptr<LeadershipKeeper> keeper;
  std::optional<RebuildCheck> rebuild;
  if (config.postgres_url.empty()) {
    lg->warn("postgres.url is not configured: outcomes and events stay in the state store");
  } else {
    keeper = std::make_unique<LeadershipKeeper>(config.postgres_url, (*log)->log_uuid(), &stopper);
    if (Status s = keeper->AcquireFirst(); !s.ok()) {
      if (stopper.stopped()) return 0;
      lg->error("{}", s.ToString());
      return 2;
    }
    auto meta = (*store)->ReadMeta();
    if (!meta.ok()) {
      lg->error("state store: {}", meta.status().ToString());
      return 1;
    }
    PgSession pg(config.postgres_url);
    for (int attempt = 1; !stopper.stopped(); ++attempt) {
      auto r = RebuildCheck::Load(&pg, "main", meta->applied_offset);
      if (r.ok()) {
        rebuild = std::move(*r);
        break;
      }
      if (r.status().error_class() != ErrorClass::kInfra) {
        lg->error("reading fold_batch: {}", r.status().ToString());
        return 1;
      }
      lg->warn("reading fold_batch: {} (retrying)", r.status().ToString());
      stopper.WaitFor(std::chrono::milliseconds(std::min(1000 * attempt, 30'000)));
    }
    if (stopper.stopped()) return 0;
    if (rebuild->pending()) {
      lg->warn(
          "state store at offset {} is behind PostgreSQL at {}: rebuilding from the log, "
          "checking the chained digest at {} batch ends",
          meta->applied_offset, rebuild->pg_applied(), rebuild->cut_offsets().size());
    }
  }
  FoldOptions fold_options = FoldOptions::FromConfig(config, &zone);
  if (rebuild) fold_options.cut_offsets = rebuild->cut_offsets();
  Fold fold(store->get(), &decoder, &source, fold_options);
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

  // Metrics the loops update.
  Metrics& m = Metrics::Global();
  Gauge* g_captured = m.GetGauge("msgx_log_next_offset", "Records in the log");
  Gauge* g_applied = m.GetGauge("msgx_fold_applied_offset", "Last log offset folded into state");
  Gauge* g_watermark = m.GetGauge("msgx_capture_watermark", "Mailbox id capture has passed");
  Counter* c_late =
      m.GetCounter("msgx_capture_late_total", "Rows captured after their gap was skipped");

  // Capture and intake, each on its own thread.
  PollLoopHealth capture_health, intake_health, fold_health;
  std::atomic<bool> fatal{false};
  std::vector<std::thread> threads;
  std::unique_ptr<PgMailbox> mailbox;
  std::unique_ptr<Capture> capture;
  if (config.mailbox_url.empty()) {
    lg->warn("mailbox.url is not configured: nothing is captured");
  } else {
    mailbox = std::make_unique<PgMailbox>(config.mailbox_url, config.mailbox_table,
                                          config.mailbox_columns);
    auto c = Capture::Create(log_store, mailbox.get(), SystemClock::Default(),
                             CaptureOptions::FromConfig(config));
    if (!c.ok()) {
      lg->error("capture: {}", c.status().ToString());
      return 1;
    }
    capture = std::move(c.value());
    threads.emplace_back([&] {
      PollLoopOptions o{"capture", config.pipeline.poll_interval,
                        std::chrono::milliseconds(30'000)};
      Status s = RunPollLoop(
          [&]() -> Result<bool> {
            auto out = capture->Poll();
            if (!out.ok()) return out.status();
            if (out->appended + out->late > 0) fold_wake.Notify();
            if (out->late > 0) c_late->Add(out->late);
            g_watermark->Set(static_cast<double>(capture->progress().watermark));
            return out->more;
          },
          o, &stopper, &capture_health);
      if (!s.ok()) {
        lg->error("capture stopped: {}", s.ToString());
        fatal = true;
        stopper.Stop();
      }
    });
  }
  std::unique_ptr<CommandIntake> intake;
  if (config.postgres_url.empty()) {
    lg->warn("postgres.url is not configured: msgx_command is not read");
  } else {
    intake = std::make_unique<CommandIntake>(config.postgres_url, log_store);
    threads.emplace_back([&] {
      PollLoopOptions o{"intake", config.pipeline.poll_interval, std::chrono::milliseconds(30'000)};
      Status s = RunPollLoop(
          [&]() -> Result<bool> {
            auto out = intake->Poll();
            if (!out.ok()) return out.status();
            if (out->appended > 0) fold_wake.Notify();
            return out->more;
          },
          o, &stopper, &intake_health);
      if (!s.ok()) {
        lg->error("command intake stopped: {}", s.ToString());
        fatal = true;
        stopper.Stop();
      }
    });
  }

  // Mirror, applier, dispatchers.
  OutputStages::Deps deps;
  deps.config = &config;
  deps.store = store->get();
  deps.zone = &zone;
  deps.log_uuid = log_store->log_uuid();
  deps.leader = keeper.get();
  deps.service = &stopper;
  std::unique_ptr<OutputStages> stages;
  if (keeper) {
    threads.emplace_back([&] {
      if (Status s = keeper->Run(); !s.ok()) {
        lg->error("leadership: {}", s.ToString());
        fatal = true;
        stopper.Stop();
      }
    });
    auto started = OutputStages::Start(deps);
    if (!started.ok()) {
      lg->error("{}", started.status().ToString());
      stopper.Stop();
      for (auto& t : threads) t.join();
      return started.status().error_class() == ErrorClass::kConfig ? 2 : 1;
    }
    stages = std::move(started.value());
  }

  // HTTP.
  std::unique_ptr<MailboxIngest> ingest;
  if (!config.mailbox_url.empty()) {
    ingest = std::make_unique<MailboxIngest>(config, &sis_decoder, SystemClock::Default());
  }
  HttpEndpoints endpoints;
  endpoints.ingest = ingest.get();
  endpoints.readiness = [&] {
    Readiness r;
    if (capture_health.stalled) r.problems.emplace_back("capture stalled (mailbox unreachable)");
    if (intake_health.stalled)
      r.problems.emplace_back("command intake stalled (postgres unreachable)");
    if (fold_health.stalled) r.problems.emplace_back("fold stalled (state store)");
    if (mailbox == nullptr) r.problems.emplace_back("mailbox.url not configured");
    if (keeper && keeper->epoch() == 0) r.problems.push_back("not leading: " + keeper->waiting());
    if (stages) {
      for (std::string& p : stages->Problems()) r.problems.push_back(std::move(p));
    }
    r.ready = r.problems.empty();
    return r;
  };
  std::atomic<std::int64_t> applied_seen{fold.applied_offset()};
  endpoints.status_json = [&] {
    rapidjson::StringBuffer buf;
    rapidjson::Writer<rapidjson::StringBuffer> w(buf);
    w.StartObject();
    w.Key("log_uuid");
    w.String(log_store->log_uuid().c_str());
    w.Key("log_next_offset");
    w.Int64(static_cast<std::int64_t>(log_store->next_offset()));
    w.Key("applied_offset");
    w.Int64(applied_seen.load());
    w.Key("capture_stalled");
    w.Bool(capture_health.stalled);
    w.Key("fold_stalled");
    w.Bool(fold_health.stalled);
    if (keeper) {
      w.Key("leader_epoch");
      w.Int64(keeper->epoch());
    }
    if (stages) {
      for (const auto& h : stages->health()) {
        w.Key(h->name.c_str());
        w.StartObject();
        w.Key("stalled");
        w.Bool(h->stalled);
        w.Key(h->name.starts_with("dispatch") ? "sent" : "offset");
        w.Int64(h->position);
        if (h->name.starts_with("dispatch")) {
          w.Key("dead");
          w.Int64(h->dead);
        }
        w.EndObject();
      }
    }
    w.EndObject();
    return std::string(buf.GetString(), buf.GetSize());
  };
  auto http = HttpServer::Start(config.http_listen, std::move(endpoints));
  if (!http.ok()) {
    lg->error("{}", http.status().ToString());
    stopper.Stop();
    for (auto& t : threads) t.join();
    return 2;
  }
  lg->info("msgx run: log {} at offset {}, applied {}, http on port {}", log_store->log_uuid(),
           log_store->next_offset(), fold.applied_offset(), (*http)->port());

  // The fold, on this thread. In seed mode a failed head is retried by
  // HeadRetry's rule and, when it runs out, ended by an EXHAUST command.
  HeadRetry head_retry(config.pipeline, SystemClock::Default(), config.state_dir + "/seed-head");
  auto wait_for_head = [&](std::int64_t offset) {
    while (!stopper.stopped() && !head_retry.Due(offset)) {
      fold_wake.WaitFor(std::chrono::milliseconds(200));
    }
  };
  int failures = 0;
  const std::size_t batch_max = static_cast<std::size_t>(config.pipeline.batch_max);
  while (!stopper.stopped()) {
    // After a restart, a head still backing off waits before its next try.
    if (auto head = head_retry.head(); head && *head == fold.applied_offset() + 1) {
      wait_for_head(*head);
      if (stopper.stopped()) break;
    }
    std::vector<FoldInput> batch;
    Status s =
        source.ReadBatch(static_cast<std::uint64_t>(fold.applied_offset() + 1), batch_max, &batch);
    if (s.ok() && HasQuarantine(batch)) s = source.BuildQuarantineIndex();
    if (s.ok() && !batch.empty()) s = fold.Process(batch);
    if (!s.ok()) {
      if (s.error_class() != ErrorClass::kInfra) {
        lg->error("fold stopped: {}", s.ToString());
        fatal = true;
        break;
      }
      fold_health.stalled = true;
      ++failures;
      lg->warn("fold stalled: {}", s.ToString());
      fold_wake.WaitFor(
          std::min(std::chrono::milliseconds(1000) * failures, std::chrono::milliseconds(30'000)));
      continue;
    }
    failures = 0;
    fold_health.stalled = false;
    if (const auto& held = fold.held()) {
      HeadVerdict v = head_retry.Failed(held->offset);
      lg->warn("{}", WithTrace(std::to_string(held->mailbox_id),
                               "seed mode: FAILED (attempt " + std::to_string(v.attempts) + ") " +
                                   held->error_class + ": " + held->error));
      if (v.kind == HeadVerdict::Kind::kExhaust) {
        ExhaustArgs x{static_cast<std::uint64_t>(held->offset), v.attempts, v.reason};
        auto appended = log_store->AppendCommands(std::vector<LogRecordData>{
            LogRecordData::Command(CommandData{x, "msgx:seed-mode", 0, 0})});
        if (Status st = appended.ok() ? source.BuildQuarantineIndex() : appended.status();
            !st.ok()) {
          lg->warn("seed mode: cannot append EXHAUST: {}", st.ToString());
        }
      } else {
        wait_for_head(held->offset);
      }
      continue;
    }
    if (stages && fold.applied_offset() != applied_seen.load()) stages->Folded();
    if (rebuild && rebuild->pending()) {
      if (Status v = rebuild->Verify(**store, fold.applied_offset()); !v.ok()) {
        lg->error("ALARM: {}", v.ToString());
        fatal = true;
        break;
      }
      if (!rebuild->pending()) {
        lg->info("rebuild caught up with PostgreSQL: {} batch digests match", rebuild->verified());
      }
    }
    if (auto head = head_retry.head(); head && fold.applied_offset() >= *head) {
      head_retry.Cleared(*head);
    }
    applied_seen = fold.applied_offset();
    g_applied->Set(static_cast<double>(fold.applied_offset()));
    g_captured->Set(static_cast<double>(log_store->next_offset()));
    if (batch.size() < batch_max) fold_wake.WaitFor(config.pipeline.poll_interval);
  }

  stopper.Stop();
  if (stages) stages->Stop();
  for (auto& t : threads) t.join();
  http->reset();
  lg->info("msgx run stopped: applied offset {}, digest {}", fold.applied_offset(),
           ToHex(fold.digest()).substr(0, 16));
  return fatal ? 1 : 0;
}

}  // namespace msgx::app
