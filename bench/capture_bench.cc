// Capture throughput from a real mailbox, PostgreSQL and MariaDB side by side
// in the same run (docs/performance.md#capture-from-mariadb-and-postgresql):
// Capture::Poll at pipeline.batch-max 1000 into a fresh LogStore (every
// append synced, as in production) until every row of the mailbox is in the
// log. items/s = rows/s. The mailboxes are prepared by
// bench/capture_mailboxes.sh, which passes their URLs in
// MSGX_BENCH_PG_MAILBOX and MSGX_BENCH_MARIADB_MAILBOX; a benchmark whose URL
// is not set is skipped.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "state/log_store.h"
#include "stream/capture/capture.h"
#include "stream/capture/mailbox_factory.h"

namespace {

using namespace msgx;  // NOLINT

void CaptureFrom(benchmark::State& state, const char* env) {
  const char* url = std::getenv(env);
  if (url == nullptr || *url == '\0') {
    state.SkipWithError((std::string(env) + " is not set (bench/capture_mailboxes.sh)").c_str());
    return;
  }
  Config config;
  config.mailbox_url = url;
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("msgx-capture-bench-" + std::to_string(::getpid()));
  std::int64_t rows = 0;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    state.PauseTiming();
    std::filesystem::remove_all(dir);
    auto mailbox = MakeMailbox(config, SystemClock::Default());
    auto log = LogStore::Open((dir / "log").string(), SystemClock::Default());
    if (!mailbox.ok() || !log.ok()) {
      state.SkipWithError(mailbox.ok() ? log.status().ToString().c_str()
                                       : mailbox.status().ToString().c_str());
      break;
    }
    auto capture = Capture::Create(log->get(), mailbox->get(), SystemClock::Default(),
                                   CaptureOptions::FromConfig(config));
    if (!capture.ok()) {
      state.SkipWithError(capture.status().ToString().c_str());
      break;
    }
    state.ResumeTiming();
    std::int64_t got = 0;
    for (;;) {
      auto p = (*capture)->Poll();
      if (!p.ok()) {
        state.SkipWithError(p.status().ToString().c_str());
        break;
      }
      got += p->appended;
      if (!p->more && p->appended == 0) break;
    }
    rows = got;
    state.PauseTiming();
    capture->reset();
    log->reset();
    mailbox->reset();
    state.ResumeTiming();
  }
  std::filesystem::remove_all(dir);
  state.counters["rows"] = static_cast<double>(rows);
  state.SetItemsProcessed(state.iterations() * rows);
}

void BM_CapturePostgres(benchmark::State& state) { CaptureFrom(state, "MSGX_BENCH_PG_MAILBOX"); }
void BM_CaptureMariaDb(benchmark::State& state) {
  CaptureFrom(state, "MSGX_BENCH_MARIADB_MAILBOX");
}
BENCHMARK(BM_CapturePostgres)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();
BENCHMARK(BM_CaptureMariaDb)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace
