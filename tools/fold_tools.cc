#include "tools/fold_tools.h"

#include <unistd.h>

#include <filesystem>

#include "base/log.h"

namespace msgx::app {

std::string ScratchDirFor(const Config& config, const std::string& what) {
  return config.state_dir + "/" + what + "-" + std::to_string(::getpid());
}

Result<std::unique_ptr<ScratchFold>> ScratchFold::Open(const Config& config,
                                                       const std::string& scratch_dir) {
  std::unique_ptr<ScratchFold> s(new ScratchFold());
  s->scratch_dir_ = scratch_dir;
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir, ec);
  std::filesystem::create_directories(scratch_dir, ec);
  if (ec) return Status::Infra("cannot create " + scratch_dir + ": " + ec.message());
  auto log = LogReader::OpenSecondary(config.state_dir + "/log", scratch_dir + "/log-secondary");
  if (!log.ok()) return log.status();
  s->log_ = std::move(*log);
  auto fallback = DecisionSettings::FromConfig(config);
  if (!fallback.ok()) return fallback.status();
  LogReader* reader = s->log_.get();
  s->source_ = std::make_unique<LogFoldSource>(
      [reader](std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
        return reader->Read(from, max, out);
      },
      [reader] { return reader->CommandIndex(); });
  if (Status st = s->source_->BuildQuarantineIndex(); !st.ok()) return st;
  // Thrown away after use: no fsync, no write-ahead log.
  StateStore::Options options;
  options.sync = false;
  options.wal = false;
  auto store = StateStore::Open(scratch_dir + "/state", options);
  if (!store.ok()) return store.status();
  s->store_ = std::move(*store);
  if (!s->source_->SettingsInForceAt(0)) {
    Logger("refold")->warn(
        "the log holds no SETTINGS record (no msgx of this version has run on it yet): folding "
        "it with this configuration's settings");
  }
  FoldOptions fold_options = FoldOptions::FromConfig(config, std::move(*fallback));
  s->read_ahead_.batch_max = 1000;  // the batches Run() used to read itself
  s->read_ahead_.fallback = fold_options.settings;
  s->read_ahead_.make_decoder = fold_options.make_decoder;
  s->read_ahead_.zone = fold_options.zone;
  s->fold_ =
      std::make_unique<Fold>(s->store_.get(), nullptr, s->source_.get(), std::move(fold_options));
  if (Status st = s->fold_->Open(); !st.ok()) return st;
  return s;
}

ScratchFold::~ScratchFold() {
  fold_.reset();
  store_.reset();
  log_.reset();
  std::error_code ec;
  std::filesystem::remove_all(scratch_dir_, ec);
}

std::int64_t ScratchFold::log_end() const {
  auto last = log_->last_offset();
  return last ? static_cast<std::int64_t>(*last) : -1;
}

Status ScratchFold::Run(std::int64_t until, const std::vector<std::int64_t>& cuts,
                        const std::function<bool(std::int64_t, const std::string&)>& on_cut) {
  if (until < 0) until = log_end();
  // The log is read and its messages decoded on a second thread, a few
  // batches ahead (docs/fold.md#decoding-ahead).
  FoldReadAhead ahead(source_.get(), fold_->applied_offset() + 1, until, cuts, read_ahead_);
  std::size_t next_cut = 0;
  while (fold_->applied_offset() < until) {
    const std::int64_t from = fold_->applied_offset() + 1;
    while (next_cut < cuts.size() && cuts[next_cut] < from) ++next_cut;
    auto in = ahead.Next();
    if (!in.ok()) return in.status();
    if (in->empty()) return Status::Internal("log ends before offset " + std::to_string(from));
    if (Status s = fold_->Process(*in); !s.ok()) return s;
    ahead.Recycle(std::move(*in));
    // Seed mode: a head that fails with the settings of its offset holds
    // here as it does in the service; stop rather than spin.
    if (fold_->held()) return {};
    if (next_cut < cuts.size() && fold_->applied_offset() == cuts[next_cut]) {
      if (on_cut && !on_cut(cuts[next_cut], fold_->digest())) return {};
      ++next_cut;
    }
  }
  return {};
}

}  // namespace msgx::app
