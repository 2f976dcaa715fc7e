// Determinism (docs/fold.md#determinism): a generated log of 100,000+ records
// over seven days of log time (schedules, snapshots, FLOP updates,
// duplicates, bad messages, replays, identity expiry, and a daily history
// sweep that removes the older days' flights) folds twice to byte-identical state and the same
// chained digest, and to the same digest and state with other batch sizes and
// other input chunking.
#include <gtest/gtest.h>

#include <limits>

#include "base/log.h"
#include "state/digest.h"
#include "stream/fold/fold.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

const FixedZone kZone(8 * 3600);

// A fixed-seed generator (determinism of the test input itself).
class Lcg {
 public:
  std::uint64_t Next() {
    s_ = s_ * 6364136223846793005ULL + 1442695040888963407ULL;
    return s_ >> 33;
  }
  int Below(int n) { return static_cast<int>(Next() % static_cast<std::uint64_t>(n)); }

 private:
  std::uint64_t s_ = 20261130;
};

// `*last_cutoff`: the SODT before which the last history sweep removed
// every flight (start of its airport day - history.keep-days).
VectorLog GenerateLog(int n, MicrosSinceEpoch* last_cutoff) {
  VectorLog log;
  Lcg rng;
  MicrosSinceEpoch t = Local(2026, 11, 30, 0, 5);
  std::int64_t id = 0;
  int seqn = 999000;              // wraps during the run
  std::vector<std::string> sent;  // earlier messages, for duplicates
  std::vector<std::int64_t> replayable;
  auto next_seqn = [&] {
    seqn = (seqn + 1) % 1'000'000;
    return std::to_string(seqn);
  };
  const MicrosSinceEpoch first_day = StartOfAirportDay(t, kZone);
  MicrosSinceEpoch day = first_day;
  // Each airport day has its own pool of flights, so the history sweep
  // (keep 2 days) really removes the older days' flights.
  auto flid = [&](int k) {
    return "F" + std::to_string((day - first_day) / 86'400'000'000LL) + "-" + std::to_string(k);
  };
  for (int i = 0; i < n; ++i) {
    t += 6'000'000;  // 6 s of log time per record: ~7 days in all
    day = StartOfAirportDay(t, kZone);
    const int r = rng.Below(1000);
    std::string raw;
    if (i % 20000 == 19999) {
      log.AddCommand(t, IdentityExpiryCommand{t - 6LL * 3600 * 1'000'000});
      continue;
    }
    if (i % 14400 == 14399) {  // once per day of log time
      log.AddCommand(t, HistorySweepCommand{});
      *last_cutoff = day - 2 * 86'400'000'000LL;  // keep-days 2, the default
      continue;
    }
    if (i % 5000 == 4999 && !replayable.empty()) {
      ReplayCommand c;
      for (int k = 0; k < 3; ++k) {
        c.mailbox_ids.push_back(
            replayable[static_cast<std::size_t>(rng.Below(static_cast<int>(replayable.size())))]);
      }
      c.mailbox_ids.push_back(id > 10 ? id - 10 : 1);  // often refused
      log.AddCommand(t, c);
      continue;
    }
    if (i % 700 == 0) {
      // A snapshot of today's flights: 60 of the pool of 400 per day.
      std::string body;
      const int base = rng.Below(150);
      for (int k = 0; k < 60; ++k) {
        const MicrosSinceEpoch sodt = day + (6 + k / 4) * 3'600'000'000LL;
        if (!body.empty()) body += ";";
        body += flid(base + k) + "," + std::to_string(sodt) + "," + (k % 17 == 3 ? "-" : "A320");
      }
      raw = Raw("AODB", next_seqn(), "SCHD", i % 1400 == 0 ? "DNLD" : "RESP", body);
    } else if (r < 150) {
      const MicrosSinceEpoch sodt = day + rng.Below(20 * 60) * 60'000'000LL;
      raw = Raw("AODB", next_seqn(), "SCHD", "ADD",
                flid(rng.Below(210)) + "," + std::to_string(sodt) + ",B738");
    } else if (r < 700) {
      static const char* kStyps[] = {"STND", "ACFT", "EOBT", "TRML", "CTOT", "FDEL"};
      const std::string styp = kStyps[rng.Below(r < 690 ? 5 : 6)];
      std::string value;
      if (styp == "EOBT" || styp == "CTOT") {
        const int v = rng.Below(10);
        value = v == 0 ? "" : v == 1 ? "?" : std::to_string(day + rng.Below(1440) * 60'000'000LL);
      } else if (styp != "FDEL") {
        value = rng.Below(20) == 0 ? "" : styp.substr(0, 1) + std::to_string(rng.Below(30));
      }
      std::string body = flid(rng.Below(220)) + "=" + value;
      if (rng.Below(10) == 0) body += ";" + flid(rng.Below(220)) + "=" + value;
      raw = Raw("AODB", next_seqn(), "FLOP", styp, body);
    } else if (r < 800 && !sent.empty()) {
      // A duplicate, sometimes with a different body.
      raw = sent[static_cast<std::size_t>(rng.Below(static_cast<int>(sent.size())))];
      if (rng.Below(3) == 0) raw += "X";
    } else if (r < 830) {
      static const char* kBad[] = {"!MALFORMED", "!PROTOCOL", "!CODEC", "NEWS"};
      const int b = rng.Below(4);
      raw = b == 3 ? Raw("AODB", next_seqn(), "FLOP", "NEWS", flid(rng.Below(400)) + "=x")
                   : Raw("AODB", next_seqn(), "FLOP", "STND", kBad[b]);
      if (b >= 2) replayable.push_back(id + 1);
    } else if (r < 840) {
      raw = "not xml at all";
    } else if (r < 860) {
      raw = Raw("AODB", next_seqn(), "RSTA", "ANY", "!MALFORMED");  // ignored
    } else if (r < 900) {
      std::string body;
      for (int k = 0; k < 5; ++k) {
        if (!body.empty()) body += ";";
        body += std::to_string(rng.Below(40)) + "=N" + std::to_string(rng.Below(5));
      }
      static const char* kRefStyps[] = {"ADD", "UPD", "DEL", "DNLD"};
      raw = Raw("AODB", next_seqn(), "AIRC", kRefStyps[rng.Below(4)], body);
    } else {
      raw = Raw("AODB", next_seqn(), "FLOP", "RENO",
                flid(rng.Below(210)) + "=B-" + std::to_string(rng.Below(100)));
    }
    if (raw.rfind("<META>", 0) == 0 && rng.Below(4) == 0) sent.push_back(raw);
    if (sent.size() > 2000) sent.erase(sent.begin(), sent.begin() + 1000);
    log.AddMessage(++id, t, std::move(raw));
  }
  return log;
}

struct FoldResult {
  std::int64_t flights_older_than_cutoff = -1;
  std::string digest;
  std::string state_hash;
  FoldCounters counters;
};

FoldResult FoldLog(const VectorLog& log, int batch_max, std::size_t chunk,
                   MicrosSinceEpoch cutoff) {
  TempDir dir;
  auto store = StateStore::Open(dir.path() + "/state", {false, false});
  EXPECT_TRUE(store.ok());
  FakeDecoder decoder;
  decoder.unsupported = {"NEWS"};
  FoldOptions options;
  options.zone = &kZone;
  options.batch_max = batch_max;
  FoldResult out;
  {
    Fold fold(store->get(), &decoder, &log, options);
    EXPECT_TRUE(fold.Open().ok());
    for (std::size_t i = 0; i < log.records.size(); i += chunk) {
      const std::size_t end = std::min(log.records.size(), i + chunk);
      std::vector<FoldInput> part(log.records.begin() + static_cast<std::ptrdiff_t>(i),
                                  log.records.begin() + static_cast<std::ptrdiff_t>(end));
      Status s = fold.Process(part);
      EXPECT_TRUE(s.ok()) << s.ToString();
    }
    out.digest = fold.digest();
    out.counters = fold.counters();
  }
  {
    auto old = (*store)->FlightsBySodt(std::numeric_limits<MicrosSinceEpoch>::min(), cutoff - 1);
    EXPECT_TRUE(old.ok());
    if (old.ok()) out.flights_older_than_cutoff = static_cast<std::int64_t>(old->size());
  }
  std::string h = GenesisDigest();
  Status s =
      (*store)->ForEachEntry([&](std::string_view cf, std::string_view k, std::string_view v) {
        std::string entry(cf);
        entry.push_back('\0');
        entry.append(k);
        entry.push_back('\0');
        entry.append(v);
        h = ChainDigest(h, entry);
      });
  EXPECT_TRUE(s.ok());
  out.state_hash = ToHex(h);
  EXPECT_EQ((*store)->ReadMeta()->digest, out.digest);
  return out;
}

TEST(FoldDeterminism, SameLogSameStateAndDigestWhateverTheBatching) {
  (void)InitLogging("off");
  MicrosSinceEpoch cutoff = 0;
  const VectorLog log = GenerateLog(100'500, &cutoff);
  const FoldResult a = FoldLog(log, 1000, log.records.size(), cutoff);
  const FoldResult b = FoldLog(log, 1000, log.records.size(), cutoff);
  const FoldResult c = FoldLog(log, 337, 4999, cutoff);
  EXPECT_EQ(a.digest, b.digest);
  EXPECT_EQ(a.state_hash, b.state_hash);
  EXPECT_EQ(a.digest, c.digest);
  EXPECT_EQ(a.state_hash, c.state_hash);
  // The mix really exercised the paths.
  const FoldCounters& k = a.counters;
  EXPECT_EQ(k.records, static_cast<std::int64_t>(log.records.size()));
  EXPECT_GT(k.succeeded, 50'000);
  EXPECT_GT(k.duplicates, 1000);
  EXPECT_GT(k.duplicate_body_differs, 100);
  EXPECT_GT(k.dead, 1000);
  EXPECT_GT(k.ignored, 1000);
  EXPECT_GT(k.replays, 10);
  EXPECT_GT(k.rejected_records, 100);
  EXPECT_GT(k.identities_expired, 0);
  EXPECT_GT(k.skipped, 1000);
  // Six sweeps over seven days of log time: the first four days' flights
  // left state, and none older than the last sweep's cutoff is left.
  EXPECT_GT(k.flights_swept, 300);
  EXPECT_EQ(a.flights_older_than_cutoff, 0);
  std::printf(
      "records=%lld succeeded=%lld skipped=%lld dead=%lld dup=%lld differ=%lld "
      "ignored=%lld rejected=%lld replays=%lld refused=%lld expired=%lld swept=%lld "
      "digest=%s\n",
      static_cast<long long>(k.records), static_cast<long long>(k.succeeded),
      static_cast<long long>(k.skipped), static_cast<long long>(k.dead),
      static_cast<long long>(k.duplicates), static_cast<long long>(k.duplicate_body_differs),
      static_cast<long long>(k.ignored), static_cast<long long>(k.rejected_records),
      static_cast<long long>(k.replays), static_cast<long long>(k.replays_refused),
      static_cast<long long>(k.identities_expired), static_cast<long long>(k.flights_swept),
      ToHex(a.digest).c_str());
}

}  // namespace
}  // namespace msgx
