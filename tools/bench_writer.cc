#include "tools/bench_writer.h"

#include <algorithm>
#include <thread>

#include "base/clock.h"

namespace msgx::app {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr auto kSlot = std::chrono::milliseconds(5);  // how often `between` runs while waiting

}  // namespace

MailboxWriter::~MailboxWriter() = default;

Result<std::unique_ptr<MailboxWriter>> MailboxWriter::Open(const Config& config) {
  Result<std::unique_ptr<BenchMailbox>> mailbox = OpenBenchMailbox(config);
  if (!mailbox.ok()) return mailbox.status();
  std::unique_ptr<MailboxWriter> w(new MailboxWriter());
  w->mailbox_ = std::move(mailbox).value();
  return w;
}

Status MailboxWriter::Insert(const std::vector<TrafficMessage>& msgs, const OnCommit& on_commit) {
  std::vector<std::int64_t> ids;
  if (Status s = mailbox_->Insert(msgs, &ids); !s.ok()) return s;
  const auto at = SteadyClock::now();
  for (std::size_t i = 0; i < ids.size() && i < msgs.size(); ++i)
    on_commit(ids[i], msgs[i].kind, at);
  return Status::Ok();
}

Status MailboxWriter::WriteNow(const std::vector<TrafficMessage>& msgs, const OnCommit& on_commit) {
  return Insert(msgs, on_commit);
}

Result<WriteStats> MailboxWriter::WriteAt(double rate, std::chrono::duration<double> duration,
                                          TrafficGenerator& gen, const TimeZone& zone,
                                          const OnCommit& on_commit,
                                          const std::function<void()>& between) {
  WriteStats stats;
  const auto total = static_cast<std::int64_t>(rate * duration.count());
  const std::int64_t per_tx = std::max<std::int64_t>(1, static_cast<std::int64_t>(rate / 50));
  const std::chrono::duration<double> period(static_cast<double>(per_tx) / rate);
  const auto start = SteadyClock::now();
  auto last_commit = start;
  std::vector<TrafficMessage> batch;
  for (std::int64_t k = 0; stats.rows < total; ++k) {
    const auto slot =
        start + std::chrono::duration_cast<SteadyClock::duration>(period * static_cast<double>(k));
    while (SteadyClock::now() < slot) {
      between();
      std::this_thread::sleep_until(std::min(slot, SteadyClock::now() + kSlot));
    }
    const LocalTime now = AirportLocalTime(SystemClock::Default()->NowMicros(), zone);
    batch.clear();
    const std::int64_t n = std::min(per_tx, total - stats.rows);
    for (std::int64_t i = 0; i < n; ++i) batch.push_back(gen.Next(now));
    Status s = Insert(batch, [&](std::int64_t id, TrafficKind kind, SteadyClock::time_point at) {
      last_commit = at;
      on_commit(id, kind, at);
    });
    if (!s.ok()) return s;
    stats.rows += n;
    ++stats.transactions;
    if (k % 8 == 0) between();
  }
  stats.seconds = std::chrono::duration<double>(last_commit - start).count();
  return stats;
}

}  // namespace msgx::app
