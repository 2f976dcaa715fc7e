#include "stream/pg/leadership_keeper.h"

#include "base/failpoint.h"
#include "base/log.h"

namespace msgx {

LeadershipKeeper::LeadershipKeeper(std::string url, std::string log_uuid, Stopper* stopper,
                                   std::chrono::milliseconds retry)
    : leadership_(std::move(url), std::move(log_uuid)), stopper_(stopper), retry_(retry) {
  waiting_ = "not yet tried";
}

std::string LeadershipKeeper::waiting() const {
  std::lock_guard<std::mutex> l(mu_);
  return waiting_;
}

Result<bool> LeadershipKeeper::TryOnce(bool* said) {
  auto lg = Logger("leadership");
  auto a = leadership_.TryAcquire();
  std::string why;
  if (!a.ok()) {
    if (a.status().error_class() == ErrorClass::kConfig) return a.status();
    why = "PostgreSQL unreachable: " + a.status().message();
  } else if (!a->leader) {
    why = "the PostgreSQL leadership lock is held by " + a->holder;
  } else {
    epoch_.store(a->epoch, std::memory_order_release);
    {
      std::lock_guard<std::mutex> l(mu_);
      waiting_.clear();
    }
    lg->info("leading with epoch {}", a->epoch);
    *said = false;
    return true;
  }
  {
    std::lock_guard<std::mutex> l(mu_);
    waiting_ = why;
  }
  if (!*said) {
    lg->warn("waiting for leadership: {}", why);
    *said = true;
  }
  return false;
}

Status LeadershipKeeper::TryFirst() {
  auto led = TryOnce(&said_);
  return led.ok() ? Status::Ok() : led.status();
}

void LeadershipKeeper::StepDownIfStale(std::string_view reason) {
  if (reason.find(kStaleEpochMark) == std::string_view::npos) return;
  std::int64_t held = epoch();
  if (held == 0 || !epoch_.compare_exchange_strong(held, 0, std::memory_order_acq_rel)) return;
  {
    std::lock_guard<std::mutex> l(mu_);
    waiting_ = "stepped down: " + std::string(reason);
  }
  stepped_down_.store(true, std::memory_order_release);
  Logger("leadership")
      ->warn(
          "stepping down from epoch {}: a write was refused ({}); the applier and "
          "dispatchers pause",
          held, reason);
}

Status LeadershipKeeper::Run() {
  auto lg = Logger("leadership");
  while (stopper_->WaitFor(retry_)) {
    if (stepped_down_.exchange(false, std::memory_order_acq_rel)) {
      // The lock session, if it still lives; and an epoch this loop may
      // have been granted on it since the step-down (then it leads again
      // at the next turn, on a new session).
      leadership_.Release();
      epoch_.store(0, std::memory_order_release);
      said_ = false;
    }
    if (epoch() > 0) {
      // Test-only (docs/commit-protocol.md#crash-points): a check that
      // misses the lost lock, as a process paused past a takeover would.
      if (MSGX_FAILPOINT_ERROR("leadership.check", "")) continue;
      Status alive = leadership_.CheckAlive();
      if (alive.ok()) continue;
      epoch_.store(0, std::memory_order_release);
      {
        std::lock_guard<std::mutex> l(mu_);
        waiting_ = "leadership lost: " + alive.message();
      }
      lg->warn("leadership lost ({}); the applier and dispatchers pause", alive.message());
    }
    auto led = TryOnce(&said_);
    if (!led.ok()) return led.status();
  }
  leadership_.Release();
  return Status::Ok();
}

}  // namespace msgx
