#include "base/stopper.h"

#include <pthread.h>

#include <csignal>
#include <thread>

namespace msgx {

void Stopper::Stop() {
  std::vector<Stopper*> children;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_.store(true, std::memory_order_release);
    children = children_;
  }
  cv_.notify_all();
  for (Stopper* c : children) c->Stop();
}

void Stopper::Link(Stopper* child) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    children_.push_back(child);
    if (!stopped()) return;
  }
  child->Stop();
}

void Stopper::Notify() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    notified_ = true;
  }
  cv_.notify_all();
}

bool Stopper::WaitFor(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, d, [this] { return notified_ || stopped(); });
  notified_ = false;
  return !stopped();
}

bool Stopper::TakeNotification() {
  std::lock_guard<std::mutex> lock(mu_);
  const bool was = notified_;
  notified_ = false;
  return was;
}

void StopOnTerminationSignals(Stopper* first, Stopper* then) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread([set, first, then] {
    int sig = 0;
    sigwait(&set, &sig);
    first->Stop();
    for (;;) {
      sigwait(&set, &sig);
      then->Stop();
    }
  }).detach();
}

}  // namespace msgx
