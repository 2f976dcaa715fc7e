// Fold throughput (docs/performance.md, "Fold"): decode + identity + decide
// + overlay + ONE synced RocksDB WriteBatch per 1000 records, over a
// realistic mix built from the corpus:
//   - one SCHD DNLD of 1000 flights (the corpus FLTR replicated, FLIDs made
//     unique) at the start of each run;
//   - then FLOP updates on those flights: STND ACFT RENO TRML EOBT CTOT
//     GTDT PSDT DELY (corpus messages, FLID and value rewritten so that most
//     change something), 5% exact duplicates, 1% MALFORMED (ABNR-ADD-1).
// Baseline from the same run: the SIS decode alone of the same messages.
// items/s = log records/s.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <string>

#include "base/log.h"
#include "base/malloc_tuning.h"
#include "codecs/sis_decoder.h"
#include "stream/fold/fold.h"
#include "stream/fold/sis_fold_decoder.h"

namespace {

using namespace msgx;  // NOLINT

// The allocator as msgx's main() tunes it (base/malloc_tuning.h), unless
// MSGX_BENCH_DEFAULT_MALLOC is set: glibc's defaults, for a same-run
// comparison (docs/performance.md#the-allocator).
const bool kAllocatorTuned =
    std::getenv("MSGX_BENCH_DEFAULT_MALLOC") == nullptr && TuneAllocatorForBatches();

constexpr int kRecords = 20'000;
constexpr int kFlights = 1000;

std::string ReadCorpus(const char* name) {
  std::ifstream in(std::filesystem::path(MSGX_CORPUS_DIR) / name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string ReplaceFirst(std::string s, const std::string& open, const std::string& close,
                         const std::string& value) {
  const std::size_t b = s.find(open);
  if (b == std::string::npos) return s;
  const std::size_t vb = b + open.size();
  const std::size_t e = s.find(close, vb);
  return s.replace(vb, e - vb, value);
}

std::string Snapshot() {
  const std::string msg = ReadCorpus("SCHD-DNLD-1.xml");
  const std::size_t b = msg.find("<FLTR>");
  const std::size_t e = msg.find("</FLTR>", b) + 7;
  const std::string one = msg.substr(b, e - b);
  std::string body;
  for (int i = 0; i < kFlights; ++i)
    body += ReplaceFirst(one, "<FLID>", "</FLID>", std::to_string(100000 + i));
  const std::size_t last = msg.rfind("</FLTR>") + 7;
  std::string out = msg.substr(0, b) + body + msg.substr(last);
  out = ReplaceFirst(out, "<RECS>", "</RECS>", std::to_string(kFlights));
  return ReplaceFirst(out, "<SEQN>", "</SEQN>", "1");
}

const std::vector<std::string>& Messages() {
  static const std::vector<std::string> msgs = [] {
    struct Template {
      std::string xml;
      std::string tag;  // value element to vary, or empty
    };
    std::vector<Template> t = {
        {ReadCorpus("FLOP-STND-1.xml"), "STND"}, {ReadCorpus("FLOP-ACFT-1.xml"), "ACFT"},
        {ReadCorpus("FLOP-RENO-1.xml"), "RENO"}, {ReadCorpus("FLOP-TRML-1.xml"), "TRML"},
        {ReadCorpus("FLOP-EOBT-1.xml"), ""},     {ReadCorpus("FLOP-CTOT-1.xml"), ""},
        {ReadCorpus("FLOP-GTDT-1.xml"), "GATE"}, {ReadCorpus("FLOP-PSDT-1.xml"), "PSST"},
        {ReadCorpus("FLOP-DELY-1.xml"), ""}};
    const std::string malformed = ReadCorpus("ABNR-ADD-1.xml");
    std::vector<std::string> out;
    out.push_back(Snapshot());
    std::uint64_t rng = 42;
    auto next = [&] {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      return static_cast<int>(rng >> 33);
    };
    for (int i = 1; i < kRecords; ++i) {
      const int r = next() % 100;
      if (r < 5 && out.size() > 2) {
        out.push_back(
            out[out.size() - 1 - static_cast<std::size_t>(next() % 10) % (out.size() - 1)]);
        continue;
      }
      if (r == 5) {
        out.push_back(ReplaceFirst(malformed, "<SEQN>", "</SEQN>", std::to_string(i + 1)));
        continue;
      }
      const Template& tp = t[static_cast<std::size_t>(next()) % t.size()];
      std::string m =
          ReplaceFirst(tp.xml, "<FLID>", "</FLID>", std::to_string(100000 + next() % kFlights));
      m = ReplaceFirst(m, "<SEQN>", "</SEQN>", std::to_string(i + 1));
      if (!tp.tag.empty()) {
        m = ReplaceFirst(m, "<" + tp.tag + ">", "</" + tp.tag + ">",
                         tp.tag.substr(0, 1) + std::to_string(next() % 40));
      }
      out.push_back(std::move(m));
    }
    return out;
  }();
  return msgs;
}

const TimeZone& Zone() {
  static const TimeZone zone = [] {
    auto z = TimeZone::Load("Asia/Shanghai");
    return z.ok() ? std::move(z).value() : TimeZone::Fixed("CST", 8 * 3600);
  }();
  return zone;
}

// 2021-01-23 01:00 +08:00, the snapshot's day.
constexpr MicrosSinceEpoch kT0 = 1'611'334'800'000'000LL;

void BM_Fold(benchmark::State& state) {
  (void)InitLogging("off");
  const auto& msgs = Messages();
  std::vector<FoldInput> log;
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    FoldInput in;
    in.offset = static_cast<std::int64_t>(i);
    in.mailbox_id = static_cast<std::int64_t>(i + 1);
    in.append_micros = kT0 + static_cast<MicrosSinceEpoch>(i) * 1000;
    in.raw = msgs[i];
    log.push_back(std::move(in));
  }
  // The log in parts of 1,000 records, cut once: the service's fold thread
  // reads its records from the log, and copying them is not the fold's work.
  std::vector<std::vector<FoldInput>> parts;
  for (std::size_t i = 0; i < log.size(); i += 1000) {
    parts.emplace_back(log.begin() + static_cast<std::ptrdiff_t>(i),
                       log.begin() + static_cast<std::ptrdiff_t>(std::min(log.size(), i + 1000)));
  }
  const TimeZoneAirportZone zone(Zone());
  const sis::SisDecoder sis_decoder(Zone());
  const SisFoldDecoder decoder(sis_decoder);
  const bool sync = state.range(0) != 0;
  std::int64_t succeeded = 0;
  // One fold of the whole log into a fresh store. Timed only between
  // resume() and pause(), so that opening and removing the store are not.
  auto fold_once = [&](auto resume, auto pause) -> bool {
    const std::string dir =
        (std::filesystem::temp_directory_path() / ("msgx-fold-bench-" + std::to_string(::getpid())))
            .string();
    std::filesystem::remove_all(dir);
    auto store = StateStore::Open(dir, {sync, false});
    if (!store.ok()) {
      state.SkipWithError(store.status().ToString().c_str());
      return false;
    }
    FoldOptions options;
    options.zone = &zone;
    options.batch_max = 1000;
    Fold fold(store->get(), &decoder, nullptr, options);
    if (!fold.Open().ok()) {
      state.SkipWithError("open");
      return false;
    }
    resume();
    for (const std::vector<FoldInput>& part : parts) {
      if (Status s = fold.Process(part); !s.ok()) {
        state.SkipWithError(s.ToString().c_str());
        return false;
      }
    }
    pause();
    succeeded = fold.counters().succeeded;
    store->reset();
    std::filesystem::remove_all(dir);
    return true;
  };
  // A warm-up fold, untimed: the first folds of a process grow its heap, and
  // each new page is a fault (docs/performance.md#the-folds-first-passes-2026-12-06-amd-epyc).
  // A service folds for months; the figure is for a warm process.
  if (!fold_once([] {}, [] {})) return;
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    state.PauseTiming();
    if (!fold_once([&] { state.ResumeTiming(); }, [&] { state.PauseTiming(); })) return;
    state.ResumeTiming();
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(log.size()));
  state.counters["succeeded"] = static_cast<double>(succeeded);
  state.counters["malloc_tuned"] = kAllocatorTuned ? 1 : 0;
}
BENCHMARK(BM_Fold)->Arg(1)->Arg(0)->ArgName("sync")->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_Fold_Baseline_DecodeOnly(benchmark::State& state) {
  const auto& msgs = Messages();
  const sis::SisDecoder decoder(Zone());
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    for (const std::string& m : msgs) {
      auto d = decoder.Decode(m, sis::InputOrigin::kUnicodeText);
      benchmark::DoNotOptimize(d);
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(msgs.size()));
}
BENCHMARK(BM_Fold_Baseline_DecodeOnly)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
