#include "stream/fold/head_retry.h"

#include <cstdio>
#include <fstream>

#include "base/backoff.h"

namespace msgx {

HeadRetry::HeadRetry(const PipelineConfig& config, Clock* clock, std::string state_path)
    : config_(config), clock_(clock), state_path_(std::move(state_path)) {
  Load();
}

void HeadRetry::Load() {
  if (state_path_.empty()) return;
  std::ifstream in(state_path_);
  std::int64_t offset = -1, first = 0, retry = 0;
  int attempts = 0;
  if (in >> offset >> first >> retry >> attempts) {
    offset_ = offset;
    first_head_ = first;
    retry_at_ = retry;
    attempts_ = attempts;
  }
}

void HeadRetry::Save() const {
  if (state_path_.empty()) return;
  const std::string tmp = state_path_ + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << offset_ << ' ' << first_head_ << ' ' << retry_at_ << ' ' << attempts_ << '\n';
  }
  std::rename(tmp.c_str(), state_path_.c_str());
}

HeadVerdict HeadRetry::Failed(std::int64_t offset) {
  const MicrosSinceEpoch now = clock_->NowMicros();
  if (offset != offset_) {  // a new head
    offset_ = offset;
    first_head_ = now;
    attempts_ = 0;
  }
  ++attempts_;
  HeadVerdict v;
  v.attempts = attempts_;
  v.failed_at = now;
  const std::int64_t deadline = first_head_ + config_.head_deadline.count() * 1000;
  if (attempts_ >= config_.max_attempts) {
    v.kind = HeadVerdict::Kind::kExhaust;
    v.reason = "max-attempts " + std::to_string(config_.max_attempts);
  } else if (now >= deadline) {
    v.kind = HeadVerdict::Kind::kExhaust;
    v.reason = "head-deadline " + std::to_string(config_.head_deadline.count() / 1000) + "s";
  } else {
    retry_at_ = now + BackoffDelay(config_.backoff, config_.backoff_cap, attempts_).count() * 1000;
    // The deadline is reachable: never wait past it.
    if (retry_at_ > deadline) retry_at_ = deadline;
    v.kind = HeadVerdict::Kind::kWait;
    v.retry_at = retry_at_;
  }
  Save();
  return v;
}

bool HeadRetry::Due(std::int64_t offset) const {
  return offset != offset_ || clock_->NowMicros() >= retry_at_;
}

void HeadRetry::Cleared(std::int64_t offset) {
  if (offset < offset_) return;
  offset_ = -1;
  attempts_ = 0;
  first_head_ = 0;
  retry_at_ = 0;
  if (!state_path_.empty()) std::remove(state_path_.c_str());
}

std::optional<std::int64_t> HeadRetry::head() const {
  if (offset_ < 0) return std::nullopt;
  return offset_;
}

}  // namespace msgx
