// Reading the log step after step, as the service's fold does
// (docs/fold.md#reading-the-log): a new RocksDB iterator for each step
// (the baseline, LogStore::Read) against one cursor kept across steps
// (LogStore::NewCursor). The log holds 20,000 copies of a corpus FLOP
// message, in table files and the memtable; each step reads
// up to `batch` records from where the last one ended, and the walk ends
// with the empty read an idle fold makes. items/s = records/s.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "base/clock.h"
#include "state/log_store.h"

namespace {

using namespace msgx;  // NOLINT

constexpr int kRecords = 20'000;

// An open log of kRecords messages in a fresh directory, removed at exit.
class FilledLog {
 public:
  FilledLog() : dir_(std::filesystem::temp_directory_path() / "msgx-log-read-bench") {
    std::filesystem::remove_all(dir_);
    std::ifstream in(std::filesystem::path(MSGX_CORPUS_DIR) / "FLOP-STND-1.xml", std::ios::binary);
    const std::string raw{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    for (int b = 0; b < kRecords / 1000; ++b) {
      // Reopened every 4,000 records: an open writes what the last one left
      // in its write-ahead log to a table file, so the log ends as a few
      // table files and a memtable, as a running service's does.
      if (b % 4 == 0 && !Reopen()) return;
      std::vector<LogRecordData> records;
      records.reserve(1000);
      for (int i = 0; i < 1000; ++i) {
        records.push_back(
            LogRecordData::Message(std::int64_t{b} * 1000 + i + 1, raw, std::nullopt));
      }
      CaptureProgress p;
      p.watermark = (std::int64_t{b} + 1) * 1000;
      if (!store_->Append(records, p).ok()) {
        store_.reset();
        return;
      }
    }
  }
  ~FilledLog() {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  FilledLog(const FilledLog&) = delete;
  FilledLog& operator=(const FilledLog&) = delete;

  const LogStore* Store() const { return store_.get(); }

 private:
  bool Reopen() {
    store_.reset();
    auto store = LogStore::Open((dir_ / "log").string(), &clock_);
    if (store.ok()) store_ = std::move(*store);
    return store.ok();
  }

  std::filesystem::path dir_;
  ManualClock clock_{1'700'000'000'000'000};
  std::unique_ptr<LogStore> store_;
};

const FilledLog& Log() {
  static const FilledLog log;
  return log;
}

// Reads the whole log in steps of `batch` with `read`; false on an error.
template <typename Read>
bool Walk(std::size_t batch, Read read) {
  std::uint64_t from = 0;
  std::vector<LogEntry> entries;
  for (;;) {
    entries.clear();
    if (!read(from, batch, &entries).ok()) return false;
    if (entries.empty()) return true;
    from = entries.back().offset + 1;
  }
}

void BM_LogRead_NewIterator(benchmark::State& state) {
  const LogStore* store = Log().Store();
  if (store == nullptr) return state.SkipWithError("could not fill the log");
  const auto batch = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    if (!Walk(batch, [&](std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
          return store->Read(from, max, out);
        })) {
      return state.SkipWithError("read failed");
    }
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}

void BM_LogRead_Cursor(benchmark::State& state) {
  const LogStore* store = Log().Store();
  if (store == nullptr) return state.SkipWithError("could not fill the log");
  const auto batch = static_cast<std::size_t>(state.range(0));
  auto cursor = store->NewCursor();
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    if (!Walk(batch, [&](std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
          return cursor->Read(from, max, out);
        })) {
      return state.SkipWithError("read failed");
    }
  }
  state.SetItemsProcessed(state.iterations() * kRecords);
}

}  // namespace

BENCHMARK(BM_LogRead_NewIterator)->Arg(1)->Arg(16)->Arg(1000)->ArgName("batch");
BENCHMARK(BM_LogRead_Cursor)->Arg(1)->Arg(16)->Arg(1000)->ArgName("batch");
