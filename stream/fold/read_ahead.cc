#include "stream/fold/read_ahead.h"

#include <algorithm>
#include <utility>

#include "base/fatal_report.h"
#include "stream/fold/decoded_ahead.h"

namespace msgx {

FoldReadAhead::FoldReadAhead(const LogFoldSource* source, std::int64_t from, std::int64_t until,
                             std::vector<std::int64_t> cuts, Options options)
    : source_(source),
      until_(until),
      cuts_(std::move(cuts)),
      options_(std::move(options)),
      next_(from) {
  thread_ = std::thread([this] {
    BeginMsgxThread("fold-readahead");
    Run();
  });
}

FoldReadAhead::~FoldReadAhead() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  room_.notify_all();
  thread_.join();
}

Result<std::vector<FoldInput>> FoldReadAhead::Next() {
  std::unique_lock<std::mutex> lock(mu_);
  ready_.wait(lock, [this] { return !queue_.empty() || done_; });
  if (queue_.empty()) return std::vector<FoldInput>();
  Result<std::vector<FoldInput>> batch = std::move(queue_.front());
  queue_.pop_front();
  lock.unlock();
  room_.notify_one();
  return batch;
}

void FoldReadAhead::Recycle(std::vector<FoldInput> batch) {
  std::lock_guard<std::mutex> lock(mu_);
  spent_.push_back(std::move(batch));
}

void FoldReadAhead::Run() {
  auto next_cut = cuts_.begin();
  for (;;) {
    std::vector<std::vector<FoldInput>> spent;
    {
      std::unique_lock<std::mutex> lock(mu_);
      room_.wait(lock, [this] { return stop_ || queue_.size() < options_.depth; });
      if (stop_ || next_ > until_) break;
      spent.swap(spent_);
    }
    spent.clear();  // freed here, off the fold's thread
    std::int64_t end = std::min(until_, next_ + options_.batch_max - 1);
    next_cut = std::lower_bound(next_cut, cuts_.end(), next_);
    if (next_cut != cuts_.end() && *next_cut <= end) end = *next_cut;
    std::vector<FoldInput> batch;
    Status s = source_->ReadBatch(static_cast<std::uint64_t>(next_),
                                  static_cast<std::size_t>(end - next_ + 1), &batch);
    if (s.ok()) Decode(&batch);
    const bool last = !s.ok() || batch.empty();
    if (!last) next_ = batch.back().offset + 1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!s.ok()) {
        queue_.emplace_back(std::move(s));
      } else if (!batch.empty()) {
        queue_.emplace_back(std::move(batch));
      }
    }
    ready_.notify_one();
    if (last) break;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  ready_.notify_all();
}

void FoldReadAhead::Decode(std::vector<FoldInput>* batch) {
  for (FoldInput& in : *batch) {
    if (in.command || source_->QuarantineReason(in.offset, -1)) continue;
    const auto in_force = source_->SettingsInForceAt(in.offset);
    const std::int64_t since = in_force ? in_force->since : -1;
    if (!settings_ || settings_->since() != since) {
      auto made = ActiveSettings::Make(in_force ? in_force->settings : options_.fallback, since,
                                       options_.make_decoder, nullptr, options_.zone);
      if (!made.ok()) {
        settings_.reset();
        continue;  // the fold meets the same error at the settings record
      }
      settings_ = std::move(*made);
    }
    in.decoded = DecodeAhead(settings_, in.raw);
  }
}

}  // namespace msgx
