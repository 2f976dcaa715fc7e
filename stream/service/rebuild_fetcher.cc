#include "stream/service/rebuild_fetcher.h"

#include <utility>

#include "base/log.h"
#include "stream/pg/pg_session.h"

namespace msgx {

RebuildFetcher::RebuildFetcher(std::string url, std::string pipeline, std::int64_t state_applied,
                               std::chrono::milliseconds retry, std::function<void()> ready)
    : retry_(retry), ready_(std::move(ready)) {
  thread_ =
      std::thread([this, url = std::move(url), pipeline = std::move(pipeline),
                   state_applied]() mutable { Loop(std::move(url), pipeline, state_applied); });
}

RebuildFetcher::~RebuildFetcher() {
  stop_.Stop();
  thread_.join();
}

void RebuildFetcher::Loop(std::string url, const std::string& pipeline,
                          std::int64_t state_applied) {
  PgSession pg(std::move(url));
  bool said = false;
  do {
    auto r = RebuildCheck::Load(&pg, pipeline, state_applied);
    if (r.ok() || r.status().error_class() != ErrorClass::kInfra) {
      {
        const std::lock_guard<std::mutex> lock(mu_);
        result_ = std::move(r);
      }
      if (ready_) ready_();
      return;
    }
    if (!said) {
      Logger("run")->warn("reading fold_batch for the rebuild check: {} (retrying)",
                          r.status().ToString());
      said = true;
    }
    const std::lock_guard<std::mutex> lock(mu_);
    last_error_ = r.status().message();
  } while (stop_.WaitFor(retry_));
}

Result<RebuildCheck> RebuildFetcher::Take() {
  const std::lock_guard<std::mutex> lock(mu_);
  if (result_) return *result_;
  return Status::Infra("PostgreSQL's fold_batch not read yet" +
                       (last_error_.empty() ? std::string() : ": " + last_error_));
}

}  // namespace msgx
