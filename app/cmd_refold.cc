// `msgx refold [--verify] [--until OFFSET]` (docs/fold.md#tools): rebuilds
// state from offset 0 in a scratch directory under state.dir, from the log
// opened as a RocksDB secondary (works while the service runs).
//
// Without --verify: prints the records folded, the applied offset and the
// chained digest. Exit 0, or 2 on a setup error (no log, bad config).
//
// With --verify: the scratch fold cuts its batches at the live store's
// batch ends and compares the chained digest at each of them; at the first
// difference it compares the outcomes decided in that batch to name the
// first divergent record. When every digest matches up to the live applied
// offset, it compares state and outcomes entry by entry (both stores walked
// once, side by side: bounded memory), then every pending batch the live
// store still holds with the refold's of the same range: events (payloads
// byte for byte), outcomes, reference, history and flight rows. Exit codes:
//   0 identical;
//   1 divergence within the current fold version (a determinism bug or
//     corruption): names the first offset and key;
//   3 divergence first seen where an older fold version decided: the
//     refold goes on to the live applied offset and prints the upgrade diff
//     (tools/state_diff.h): every message whose outcome changes, old and
//     new, and every flight and reference record whose fields change, old
//     and new (docs/fold.md#the-upgrade-diff).
// --until OFFSET limits both the rebuild and the comparison (below the live
// applied offset, an upgrade diff names only the first changed record).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <future>
#include <iostream>
#include <map>

#include "app/command.h"
#include "app/setup.h"
#include "base/clock.h"
#include "base/log.h"
#include "state/digest.h"
#include "state/pending_batch.h"
#include "state/state_codec.h"
#include "tools/fold_tools.h"
#include "tools/state_diff.h"

namespace msgx::app {
namespace {

// Logs how long each phase took, at info ("refold: <phase> in N ms"): an
// operator re-folding a large log sees where the time goes.
class PhaseTimer {
 public:
  explicit PhaseTimer(const Clock& clock) : clock_(clock), start_(clock.MonotonicMicros()) {}
  void Done(const char* phase) {
    const std::int64_t now = clock_.MonotonicMicros();
    Logger("refold")->info("{} in {} ms", phase, (now - start_) / 1000);
    start_ = now;
  }

 private:
  const Clock& clock_;
  std::int64_t start_;
};

struct RefoldArgs {
  bool verify = false;
  std::int64_t until = -1;
};

// The first outcome decided in [from, to] that differs between the two
// stores, by log offset then mailbox id: (refold's, live's), or nullopt.
using OutcomeDiff = std::pair<Outcome, std::optional<Outcome>>;
Result<std::optional<OutcomeDiff>> FirstOutcomeDiff(const StateStore& rebuilt,
                                                    const StateStore& live, std::int64_t from,
                                                    std::int64_t to) {
  std::map<std::pair<std::int64_t, std::int64_t>, Outcome> in_range;
  Status bad;
  Status s = rebuilt.ForEachEntry([&](std::string_view cf, std::string_view, std::string_view v) {
    if (cf != "outcomes" || !bad.ok()) return;
    auto o = DecodeOutcome(v);
    if (!o.ok()) {
      bad = o.status();
    } else if (o->log_offset >= from && o->log_offset <= to) {
      in_range.emplace(std::make_pair(o->log_offset, o->mailbox_id), *o);
    }
  });
  if (!s.ok()) return s;
  if (!bad.ok()) return bad;
  for (const auto& [k, o] : in_range) {
    auto l = live.GetOutcome(o.mailbox_id);
    if (!l.ok()) return l.status();
    if (!l->has_value() || !(**l == o)) return std::optional(OutcomeDiff(o, *l));
  }
  return std::optional<OutcomeDiff>();
}

// The first entry ("cf/hex key") where the two stores differ, or nullopt.
// The fold version the live store last committed with is not compared: an
// older version that decided the same is no divergence. The column families
// before the outcomes and the rest (each about half the entries) are walked
// on two threads; the first half's difference comes first in the order.
Result<std::optional<std::string>> FirstEntryDiff(const StateStore& rebuilt,
                                                  const StateStore& live) {
  constexpr std::size_t kSplit = 5;  // "outcomes" (state/state_store.cc)
  auto walk = [&](std::size_t first_cf, std::size_t end_cf) -> Result<std::optional<std::string>> {
    std::optional<std::string> first;
    Status s = DiffEntries(
        rebuilt, live,
        [&](std::string_view cf, std::string_view key, auto, auto) {
          if (cf == "meta" && key == "fold_version") return true;
          first = std::string(cf) + "/" + ToHex(key);
          return false;
        },
        first_cf, end_cf);
    if (!s.ok()) return s;
    return first;
  };
  auto second = std::async(std::launch::async, walk, kSplit, StateStore::kColumnFamilies);
  auto first = walk(0, kSplit);
  auto later = second.get();
  if (!first.ok()) return first;
  if (*first) return first;
  return later;
}

// What differs between two pending batches of the same range ("" when
// nothing does): the first event by position, else the kind of row.
std::string PendingDiff(const PendingBatch& refold, const PendingBatch& live) {
  const std::size_t n = std::max(refold.events.size(), live.events.size());
  auto name = [](const EventRow& e) {
    return "event " + e.event_key + " (" + e.target + ", flight " + e.partition_key + ")";
  };
  for (std::size_t i = 0; i < n; ++i) {
    if (i >= refold.events.size()) return name(live.events[i]) + " only live";
    if (i >= live.events.size()) return name(refold.events[i]) + " only refold";
    const EventRow& r = refold.events[i];
    const EventRow& l = live.events[i];
    if (r == l) continue;
    if (r.payload_json != l.payload_json) {
      return name(r) + " payload differs\n  live:    " + l.payload_json +
             "\n  refold:  " + r.payload_json;
    }
    return name(r) + " differs outside its payload";
  }
  if (refold.outcomes != live.outcomes) return "outcome rows differ";
  if (refold.references != live.references) return "reference rows differ";
  if (refold.history != live.history) return "history rows differ";
  if (refold.flights != live.flights) return "flight rows differ";
  PendingBatch same_version = live;  // the version that decided it is no difference
  same_version.fold_version = refold.fold_version;
  if (!(refold == same_version)) return "the batch's header differs";
  return "";
}

// The first pending batch up to `limit` that the live store still holds and
// the refold decides differently: "batch [first,last]: what", or nullopt.
Result<std::optional<std::string>> FirstPendingDiff(const StateStore& rebuilt,
                                                    const StateStore& live, std::int64_t limit) {
  auto ranges = live.PendingRanges();
  if (!ranges.ok()) return ranges.status();
  for (const auto& [first, last] : *ranges) {
    if (last > limit) break;
    auto l = live.PendingCovering(first);
    if (!l.ok()) return l.status();
    auto r = rebuilt.PendingCovering(first);
    if (!r.ok()) return r.status();
    if (!l->has_value()) continue;
    const std::string batch =
        "batch [" + std::to_string(first) + "," + std::to_string(last) + "]: ";
    if (!r->has_value() || (*r)->first_offset != first || (*r)->last_offset != last) {
      return std::optional(batch + "the refold has no pending batch of that range");
    }
    if (std::string d = PendingDiff(**r, **l); !d.empty()) return std::optional(batch + d);
  }
  return std::optional<std::string>();
}

int RunRefold(const GlobalOptions& global, const RefoldArgs& args) {
  Result<Config> config = LoadAndInit(global);
  if (!config.ok()) return 2;
  // With --verify the live store is opened first: the log, opened after it,
  // then holds every record the live store has applied, even while the
  // service appends and folds.
  PhaseTimer timer(*SystemClock::Default());
  std::unique_ptr<StateStore> live;
  if (args.verify) {
    auto opened = StateStore::Open(config->state_dir + "/state", {false, true});
    if (!opened.ok()) {
      std::cerr << "msgx refold: " << opened.status().ToString() << "\n";
      return 2;
    }
    live = std::move(*opened);
    timer.Done("opened the live state store");
  }
  auto scratch = ScratchFold::Open(*config, ScratchDirFor(*config, "refold"));
  if (!scratch.ok()) {
    std::cerr << "msgx refold: " << scratch.status().ToString() << "\n";
    return 2;
  }
  timer.Done("indexed the log's commands");
  ScratchFold& sf = **scratch;
  if (!args.verify) {
    if (Status s = sf.Run(args.until, {}, nullptr); !s.ok()) {
      std::cerr << "msgx refold: " << s.ToString() << "\n";
      return 2;
    }
    const FoldCounters& k = sf.fold().counters();
    std::cout << "refolded offsets 0.." << sf.fold().applied_offset() << " records=" << k.records
              << " succeeded=" << k.succeeded << " skipped=" << k.skipped << " dead=" << k.dead
              << " fold_version=" << kFoldVersion << " digest=" << ToHex(sf.fold().digest())
              << "\n";
    if (const auto& h = sf.fold().held()) {
      std::cout << "held at offset " << h->offset << " (seed mode: mailbox id " << h->mailbox_id
                << " failed " << h->error_class << ", and no EXHAUST for it is in the log)\n";
    }
    return 0;
  }

  auto meta = live->ReadMeta();
  auto ends = live->BatchEnds();
  if (!meta.ok() || !ends.ok()) {
    std::cerr << "msgx refold: cannot read the live state store\n";
    return 2;
  }
  std::int64_t limit = meta->applied_offset;
  if (args.until >= 0) limit = std::min(limit, args.until);
  std::vector<std::int64_t> cuts;
  std::map<std::int64_t, StateStore::BatchEnd> by_end;
  for (const auto& e : *ends) {
    if (e.end_offset <= limit) {
      cuts.push_back(e.end_offset);
      by_end[e.end_offset] = e;
    }
  }
  // The first batch whose digest differs. Where an older fold version
  // decided it, the refold goes on to the end without comparing digests
  // (chained, every later one differs too) to write the upgrade diff.
  std::optional<std::int64_t> bad_end;
  std::int64_t prev_end = -1, bad_from = 0;
  Status s = sf.Run(limit, cuts, [&](std::int64_t end, const std::string& digest) {
    if (bad_end) return true;
    if (digest != by_end[end].digest) {
      bad_end = end;
      bad_from = prev_end + 1;
      return by_end[end].fold_version != kFoldVersion;
    }
    prev_end = end;
    return true;
  });
  if (!s.ok()) {
    std::cerr << "msgx refold: " << s.ToString() << "\n";
    return 2;
  }
  timer.Done("folded and compared the batch digests");
  if (const auto& h = sf.fold().held(); h && !bad_end) {
    std::cout << "DIVERGENCE: the refold holds at offset " << h->offset
              << " (seed mode), which the live fold applied\n";
    return 1;
  }
  if (bad_end) {
    const StateStore::BatchEnd& be = by_end[*bad_end];
    auto first = FirstOutcomeDiff(sf.store(), *live, bad_from, *bad_end);
    if (!first.ok()) {
      std::cerr << "msgx refold: comparing outcomes: " << first.status().ToString() << "\n";
      return 2;
    }
    const std::optional<OutcomeDiff>& diff = *first;
    const bool older = be.fold_version != kFoldVersion;
    std::cout << (older ? "upgrade diff" : "DIVERGENCE") << ": digest differs in batch ["
              << bad_from << "," << *bad_end << "] (decided by fold version " << be.fold_version
              << ", now " << kFoldVersion << ")\n";
    if (older && limit == meta->applied_offset) {
      // What the current fold version changes, message by message and
      // record by record, against the whole live state.
      auto counts = WriteUpgradeDiff(*live, sf.store(), sf.zone(), std::cout);
      if (!counts.ok()) {
        std::cerr << "msgx refold: writing the upgrade diff: " << counts.status().ToString()
                  << "\n";
        return 2;
      }
      std::cout << "changes: " << counts->messages << " message(s), " << counts->flights
                << " flight(s), " << counts->references << " reference record(s)\n";
      if (counts->messages + counts->flights + counts->references == 0) {
        std::cout << "no outcome, flight or reference record changes: the difference is in "
                     "identity bindings, events or the recorded digest alone\n";
      }
      return 3;
    }
    if (diff) {
      std::cout << "first record: offset " << diff->first.log_offset << " mailbox id "
                << diff->first.mailbox_id << "\n  live:    "
                << (diff->second ? DescribeOutcome(*diff->second) : std::string("(none)"))
                << "\n  refold:  " << DescribeOutcome(diff->first) << "\n";
    } else {
      std::cout << "outcomes agree in that batch; the difference is in state changes\n";
    }
    if (older) std::cout << "(without --until, the diff lists every change)\n";
    return older ? 3 : 1;
  }
  // The events and rows each batch handed to PostgreSQL and Redis, compared
  // on a thread of their own while the state is.
  auto pending_diff =
      std::async(std::launch::async, [&] { return FirstPendingDiff(sf.store(), *live, limit); });
  if (limit == meta->applied_offset) {
    // Digests agree everywhere: compare the state entry by entry.
    auto entry = FirstEntryDiff(sf.store(), *live);
    if (!entry.ok()) {
      std::cerr << "msgx refold: comparing the state: " << entry.status().ToString() << "\n";
      return 2;
    }
    if (*entry) {
      std::cout << "DIVERGENCE: digests agree but state differs at " << **entry << "\n";
      return 1;
    }
    timer.Done("compared the state entry by entry");
  }
  auto pending = pending_diff.get();
  if (!pending.ok()) {
    std::cerr << "msgx refold: comparing pending batches: " << pending.status().ToString() << "\n";
    return 2;
  }
  if (*pending) {
    std::cout << "DIVERGENCE: digests agree but a pending " << **pending << "\n";
    return 1;
  }
  timer.Done("compared the pending batches");
  std::cout << "identical up to offset " << limit << " (" << cuts.size()
            << " batch digests compared) digest=" << ToHex(sf.fold().digest()) << "\n";
  return 0;
}

}  // namespace

void RegisterRefold(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* cmd =
      root.add_subcommand("refold", "Rebuild state from the log in a scratch directory");
  auto args = std::make_shared<RefoldArgs>();
  cmd->add_flag("--verify", args->verify, "compare with the live state; exit 1 or 3 on divergence");
  cmd->add_option("--until", args->until, "stop at this log offset");
  cmd->callback([&global, exit_code, args] { *exit_code = RunRefold(global, *args); });
}

}  // namespace msgx::app
