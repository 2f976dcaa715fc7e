#include "stream/capture/capture.h"

#include <algorithm>
#include <string>
#include <utility>

#include "base/log.h"

namespace msgx {
namespace {

constexpr std::int64_t kReferenceEveryMicros = 60'000'000;

// Removes `id` from the ranges, splitting the range that holds it.
void RemoveId(std::map<std::int64_t, SkippedRange>* ranges, std::int64_t id) {
  auto it = ranges->upper_bound(id);
  if (it == ranges->begin()) return;
  --it;
  SkippedRange r = it->second;
  if (id < r.first || id > r.last) return;
  ranges->erase(it);
  if (r.first < id) {
    SkippedRange lo = r;
    lo.last = id - 1;
    (*ranges)[lo.first] = lo;
  }
  if (id < r.last) {
    SkippedRange hi = r;
    hi.first = id + 1;
    (*ranges)[hi.first] = hi;
  }
}

std::string RangeText(std::int64_t first, std::int64_t last) {
  return first == last ? std::to_string(first)
                       : std::to_string(first) + ".." + std::to_string(last);
}

}  // namespace

CaptureOptions CaptureOptions::FromConfig(const Config& config) {
  CaptureOptions o;
  o.batch_max = config.pipeline.batch_max;
  o.max_commit_delay = config.capture_max_commit_delay;
  o.start_after_id = config.capture_start_after_id;
  return o;
}

Result<std::unique_ptr<Capture>> Capture::Create(LogStore* log, Mailbox* mailbox, Clock* clock,
                                                 CaptureOptions options) {
  std::optional<CaptureProgress> p = log->capture_progress();
  if (!p) {
    // First capture into this log: the cut-over point, persisted at once so
    // that a later change of capture.start-after-id has no effect.
    CaptureProgress first;
    first.watermark = options.start_after_id;
    auto r = log->Append({}, first);
    if (!r.ok()) return r.status();
    Logger("capture")->info("first capture into log {}: starting after mailbox id {}",
                            log->log_uuid(), first.watermark);
    p = first;
  } else if (options.start_after_id > p->watermark) {
    Logger("capture")->warn(
        "capture.start-after-id {} ignored: this log already captured up to mailbox id {}",
        options.start_after_id, p->watermark);
  }
  return std::unique_ptr<Capture>(new Capture(log, mailbox, clock, options, std::move(*p)));
}

Capture::Capture(LogStore* log, Mailbox* mailbox, Clock* clock, CaptureOptions options,
                 CaptureProgress progress)
    : log_(log),
      mailbox_(mailbox),
      clock_(clock),
      options_(options),
      progress_(std::move(progress)) {
  progress_.aged_out.clear();  // recorded in the log store; not needed here
}

Status Capture::RecheckSkipped(CaptureProgress* next, std::vector<LogRecordData>* records,
                               PollOutcome* out) {
  if (next->skipped.empty()) return Status::Ok();
  std::vector<IdRange> ranges;
  for (const auto& [first, r] : next->skipped) ranges.push_back(IdRange{r.first, r.last});
  std::vector<MailboxRow> rows;
  Status s = mailbox_->ReadRanges(ranges, options_.batch_max, &rows);
  if (!s.ok()) return s;
  for (MailboxRow& row : rows) {
    Logger("capture")->warn(
        "{}", WithTrace(std::to_string(row.id),
                        "late row: committed after its gap was skipped; appended out of order"));
    RemoveId(&next->skipped, row.id);
    records->push_back(
        LogRecordData::Message(row.id, std::move(row.message), row.received_at, /*late=*/true));
    ++next->late_captured;
    ++out->late;
  }
  if (static_cast<int>(rows.size()) >= options_.batch_max) {
    // The re-read was cut short: rows of the ranges may be unread yet, so
    // nothing ages out before a complete one.
    out->more = true;
    return Status::Ok();
  }

  // Age out only after a complete re-read, so that a row found now is
  // captured.
  const MicrosSinceEpoch now = clock_->NowMicros();
  const std::int64_t horizon =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.skipped_retention).count();
  for (auto it = next->skipped.begin(); it != next->skipped.end();) {
    if (now - it->second.skipped_at < horizon) {
      ++it;
      continue;
    }
    SkippedRange r = it->second;
    r.aged_out_at = now;
    Logger("capture")->warn("skipped mailbox ids {} aged out: no longer re-checked",
                            RangeText(r.first, r.last));
    next->aged_out[r.first] = r;
    it = next->skipped.erase(it);
    ++out->aged_out;
  }
  return Status::Ok();
}

Result<Capture::GapDecision> Capture::Probe(std::int64_t first, std::int64_t last,
                                            GapDecision unsupported) {
  auto probe = mailbox_->ProbeGap(IdRange{first, last});
  if (!probe.ok()) return probe.status();
  switch (*probe) {
    case GapProbe::kFree:
      return GapDecision::kSkipEnded;
    case GapProbe::kCommitted:
      return GapDecision::kReread;
    case GapProbe::kHeld:
      return GapDecision::kWait;
    case GapProbe::kUnsupported:
      break;
  }
  return unsupported;
}

Result<Capture::GapDecision> Capture::DecideGap(std::int64_t first, std::int64_t last,
                                                bool ended_before_read) {
  const std::int64_t now = clock_->MonotonicMicros();
  const std::int64_t delay =
      std::chrono::duration_cast<std::chrono::microseconds>(options_.max_commit_delay).count();
  if (gap_ && gap_->first == first) {
    Result<GapDecision> d = GapDecision::kWait;
    if (ended_before_read) {
      d = Probe(first, last, GapDecision::kSkipEnded);
    } else if (!gap_->by_transactions) {
      d = Probe(first, last, GapDecision::kWait);
    } else if (!gap_->in_progress) {
      // Taken now instead of when the gap was first seen: the holder took
      // its id before that read, so it is still in progress now or has
      // ended (then the re-read decides), as below.
      d = AskTransactions(first, last);
    }
    if (d.ok() && *d == GapDecision::kWait && now - gap_->seen_at >= delay) {
      return GapDecision::kSkipDelay;
    }
    return d;
  }

  // A new gap: remember who is in progress now. The holder of a missing id
  // took it before the read that showed the gap, so it is among them, or
  // had already ended (then the re-read below decides), or had no
  // transaction id yet (then the late-row path catches it).
  gap_ = Gap{first, now, {}, false};
  Logger("capture")->info(
      "{}", WithTrace(std::to_string(first), "gap at mailbox ids " + RangeText(first, last)));
  if (delay <= 0) return GapDecision::kSkipDelay;
  if (!mailbox_->SupportsTransactionStatus()) return Probe(first, last, GapDecision::kWait);
  gap_->by_transactions = true;
  return AskTransactions(first, last);
}

Result<Capture::GapDecision> Capture::AskTransactions(std::int64_t first, std::int64_t last) {
  auto xip = mailbox_->InProgressTransactions();
  if (!xip.ok()) return xip.status();
  if (!xip->has_value()) return GapDecision::kWait;  // cannot tell yet: ask at the next poll
  gap_->in_progress = std::move(**xip);
  auto ended = mailbox_->AllEnded(*gap_->in_progress);
  if (!ended.ok()) return ended.status();
  if (!*ended) return GapDecision::kWait;
  // All ended already: read the gap again, after that check.
  std::vector<MailboxRow> again;
  const IdRange range{first, last};
  Status s = mailbox_->ReadRanges(std::span<const IdRange>(&range, 1), 1, &again);
  if (!s.ok()) return s;
  if (!again.empty()) return GapDecision::kReread;
  return Probe(first, last, GapDecision::kSkipEnded);
}

Result<std::int64_t> Capture::Backlog() {
  auto max = mailbox_->MaxId();
  if (!max.ok()) return max.status();
  return std::max<std::int64_t>(0, *max - progress_.watermark);
}

Result<PollOutcome> Capture::Poll() {
  // The mailbox server's clock bounds this host's in the log's append times
  // (docs/fold.md#the-folds-clock): read before the first append of this
  // process, then once a minute.
  const std::int64_t mono = clock_->MonotonicMicros();
  if (reference_read_mono_ < 0 || mono - reference_read_mono_ >= kReferenceEveryMicros) {
    auto server_now = mailbox_->ServerNow();
    if (!server_now.ok()) return server_now.status();
    log_->ObserveReferenceClock(*server_now);
    reference_read_mono_ = mono;
  }
  PollOutcome out;
  CaptureProgress next = progress_;
  next.aged_out.clear();  // recorded by the append that aged them out
  std::vector<LogRecordData> records;

  Status s = RecheckSkipped(&next, &records, &out);
  if (!s.ok()) return s;

  // For a gap already waited at, ask about its transactions BEFORE reading:
  // if they had all ended and the read still shows the gap, it is permanent.
  bool ended_before_read = false;
  if (gap_ && gap_->first == next.watermark + 1 && gap_->by_transactions && gap_->in_progress) {
    auto ended = mailbox_->AllEnded(*gap_->in_progress);
    if (!ended.ok()) return ended.status();
    ended_before_read = *ended;
  }

  std::vector<MailboxRow> rows;
  s = mailbox_->ReadAfter(next.watermark, options_.batch_max, &rows);
  if (!s.ok()) return s;

  bool stopped = false;
  std::int64_t skipped_ended = 0;
  std::int64_t skipped_delay = 0;
  for (MailboxRow& row : rows) {
    if (row.id <= next.watermark) continue;  // cannot happen: ids > watermark, ascending
    if (row.id > next.watermark + 1) {
      const std::int64_t first = next.watermark + 1;
      const std::int64_t last = row.id - 1;
      auto decision = DecideGap(first, last, ended_before_read);
      if (!decision.ok()) return decision.status();
      if (*decision == GapDecision::kWait) {
        out.waiting_at = first;
        stopped = true;
        break;
      }
      if (*decision == GapDecision::kReread) {
        out.more = true;
        stopped = true;
        break;
      }
      const SkipReason reason = *decision == GapDecision::kSkipEnded
                                    ? SkipReason::kTransactionsEnded
                                    : SkipReason::kCommitDelay;
      next.skipped[first] = SkippedRange{first, last, clock_->NowMicros(), reason, 0};
      next.watermark = last;
      out.skipped_ids += last - first + 1;
      (reason == SkipReason::kTransactionsEnded ? skipped_ended : skipped_delay) +=
          last - first + 1;
      Logger("capture")->info(
          "{}", WithTrace(std::to_string(first),
                          "skipped mailbox ids " + RangeText(first, last) +
                              (reason == SkipReason::kTransactionsEnded
                                   ? (mailbox_->SupportsTransactionStatus()
                                          ? ": every transaction in progress at the gap has ended"
                                          : ": no transaction holds them (gap probe)")
                                   : ": capture.max-commit-delay passed")));
      gap_.reset();
    }
    next.watermark = row.id;
    records.push_back(LogRecordData::Message(row.id, std::move(row.message), row.received_at));
    ++out.appended;
  }
  if (!stopped) {
    gap_.reset();
    if (static_cast<int>(rows.size()) >= options_.batch_max) out.more = true;
  }

  if (!records.empty() || !(next == progress_)) {
    auto r = log_->Append(records, next);
    if (!r.ok()) return r.status();
    progress_ = std::move(next);
  }
  // Counted only once persisted, so a failed poll that is redone counts once.
  stats_.skipped_by_transactions += skipped_ended;
  stats_.skipped_by_delay += skipped_delay;
  stats_.appended += out.appended;
  stats_.late += out.late;
  stats_.aged_out += out.aged_out;
  return out;
}

}  // namespace msgx
