// The state store's outcome counts (state/outcome_counts.h): kept with every
// batch, equal to a count of the outcomes themselves, and counted again
// when a store has none that are current (one an older msgx wrote last).
#include "state/outcome_counts.h"

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "state/state_store.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

Outcome MakeOutcome(std::int64_t id, OutcomeState state, std::string error_class = "") {
  Outcome o;
  o.mailbox_id = id;
  o.state = state;
  o.error_class = std::move(error_class);
  o.log_offset = id;
  return o;
}

// The counts by reading every outcome, as msgx status did.
OutcomeCounts CountByReading(const StateStore& store) {
  OutcomeCounts c;
  EXPECT_TRUE(store.ForEachOutcome([&](const Outcome& o) { c.Add(o, +1); }).ok());
  return c;
}

OutcomeCounts Kept(const StateStore& store) {
  auto kept = store.CountedOutcomes();
  EXPECT_TRUE(kept.ok()) << kept.status().ToString();
  if (!kept.ok() || !*kept) {
    ADD_FAILURE() << "the store keeps no current counts";
    return {};
  }
  return **kept;
}

// Whether a read-only open (msgx status's) finds counts it can trust.
bool ReadOnlyOpenKeepsCounts(const std::string& path) {
  auto ro = StateStore::Open(path, {false, true});
  EXPECT_TRUE(ro.ok()) << ro.status().ToString();
  if (!ro.ok()) return false;
  auto kept = (*ro)->CountedOutcomes();
  EXPECT_TRUE(kept.ok()) << kept.status().ToString();
  return kept.ok() && kept->has_value();
}

Status Commit(StateStore* store, std::int64_t applied, const std::vector<Outcome>& outcomes) {
  BatchWrite w;
  for (const Outcome& o : outcomes) w.outcomes[o.mailbox_id] = o;
  w.meta.applied_offset = applied;
  return store->Commit(w);
}

// Deletes the stored counts, or replaces them with `bytes`, as an older
// msgx leaves a store: its meta column family through RocksDB itself.
void RewriteStoredCounts(const std::string& path, const std::optional<std::string>& bytes) {
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (std::size_t i = 0; i < StateStore::kColumnFamilies; ++i) {
    cfs.emplace_back(std::string(StateStore::ColumnFamilyName(i)), rocksdb::ColumnFamilyOptions());
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), path, cfs, &handles, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  rocksdb::ColumnFamilyHandle* meta = nullptr;
  for (std::size_t i = 0; i < handles.size(); ++i) {
    if (StateStore::ColumnFamilyName(i) == "meta") meta = handles[i];
  }
  ASSERT_NE(meta, nullptr);
  const rocksdb::Status s =
      bytes ? db->Put(rocksdb::WriteOptions(), meta, "batch/outcome-counts", *bytes)
            : db->Delete(rocksdb::WriteOptions(), meta, "batch/outcome-counts");
  ASSERT_TRUE(s.ok()) << s.ToString();
  for (auto* h : handles) ASSERT_TRUE(db->DestroyColumnFamilyHandle(h).ok());
  ASSERT_TRUE(db->Close().ok());
}

TEST(OutcomeCountsTest, AddingAndTakingOutDropsZeroCountsAndRoundTrips) {
  OutcomeCounts c;
  c.Add(MakeOutcome(1, OutcomeState::kSucceeded), +1);
  c.Add(MakeOutcome(2, OutcomeState::kDead, "MALFORMED"), +1);
  c.Add(MakeOutcome(3, OutcomeState::kDead, "UNSUPPORTED"), +1);
  c.Add(MakeOutcome(3, OutcomeState::kDead, "UNSUPPORTED"), -1);
  EXPECT_EQ(c.by_state, (std::map<std::string, std::int64_t>{{"DEAD", 1}, {"SUCCEEDED", 1}}));
  EXPECT_EQ(c.dead_by_class, (std::map<std::string, std::int64_t>{{"MALFORMED", 1}}));
  auto back = OutcomeCounts::Decode(c.Encode(41));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->applied_offset, 41);
  EXPECT_EQ(back->counts, c);
  EXPECT_FALSE(OutcomeCounts::Decode(c.Encode(41).substr(0, 12)).ok());
}

TEST(OutcomeCountsTest, TheStoreKeepsTheCountsOfWhatItHolds) {
  TempDir dir;
  const std::string path = dir.path() + "/state";
  {
    auto store = StateStore::Open(path, {false});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    StateStore& s = **store;
    EXPECT_EQ(Kept(s), OutcomeCounts());
    ASSERT_TRUE(Commit(&s, 2,
                       {MakeOutcome(1, OutcomeState::kSucceeded),
                        MakeOutcome(2, OutcomeState::kDead, "UNSUPPORTED"),
                        MakeOutcome(3, OutcomeState::kSkipped)})
                    .ok());
    EXPECT_EQ(Kept(s), CountByReading(s));
    // A replay decides message 2 again, and a later batch decides 4 and 5;
    // 4 is decided twice in its batch (the batch keeps the last).
    ASSERT_TRUE(Commit(&s, 4,
                       {MakeOutcome(2, OutcomeState::kSucceeded),
                        MakeOutcome(4, OutcomeState::kDead, "MALFORMED"),
                        MakeOutcome(5, OutcomeState::kDead, "UNSUPPORTED")})
                    .ok());
    const OutcomeCounts now = Kept(s);
    EXPECT_EQ(now, CountByReading(s));
    EXPECT_EQ(now.by_state,
              (std::map<std::string, std::int64_t>{{"DEAD", 2}, {"SKIPPED", 1}, {"SUCCEEDED", 2}}));
    EXPECT_EQ(now.dead_by_class,
              (std::map<std::string, std::int64_t>{{"MALFORMED", 1}, {"UNSUPPORTED", 1}}));
  }
  // Read-only, as msgx status opens it: the same counts, not read again.
  EXPECT_TRUE(ReadOnlyOpenKeepsCounts(path));
  auto ro = StateStore::Open(path, {false, true});
  ASSERT_TRUE(ro.ok()) << ro.status().ToString();
  EXPECT_EQ(Kept(**ro), CountByReading(**ro));
  auto counted = (*ro)->CountOutcomes();
  ASSERT_TRUE(counted.ok());
  EXPECT_EQ(*counted, Kept(**ro));
}

TEST(OutcomeCountsTest, AStoreWithoutCurrentCountsIsCountedWhenOpenedWritable) {
  TempDir dir;
  const std::string path = dir.path() + "/state";
  {
    auto store = StateStore::Open(path, {false});
    ASSERT_TRUE(store.ok()) << store.status().ToString();
    ASSERT_TRUE(Commit(store->get(), 1,
                       {MakeOutcome(1, OutcomeState::kDead, "MALFORMED"),
                        MakeOutcome(2, OutcomeState::kSucceeded)})
                    .ok());
  }
  // None at all: a read-only open has none to give (status reads them all).
  RewriteStoredCounts(path, std::nullopt);
  EXPECT_FALSE(ReadOnlyOpenKeepsCounts(path));
  {
    // What msgx status shows then: the outcomes counted by reading them.
    auto ro = StateStore::Open(path, {false, true});
    ASSERT_TRUE(ro.ok());
    auto counted = (*ro)->CountOutcomes();
    ASSERT_TRUE(counted.ok()) << counted.status().ToString();
    EXPECT_EQ(*counted, CountByReading(**ro));
    EXPECT_EQ(counted->dead_by_class, (std::map<std::string, std::int64_t>{{"MALFORMED", 1}}));
  }
  {
    auto store = StateStore::Open(path, {false});
    ASSERT_TRUE(store.ok());
    EXPECT_EQ(Kept(**store), CountByReading(**store));
  }
  // Stale: counts of an earlier offset, which an older msgx left behind
  // while it wrote more outcomes. They are counted again, not trusted.
  OutcomeCounts wrong;
  wrong.Add(MakeOutcome(9, OutcomeState::kSkipped), +1);
  RewriteStoredCounts(path, wrong.Encode(0));
  EXPECT_FALSE(ReadOnlyOpenKeepsCounts(path));
  auto store = StateStore::Open(path, {false});
  ASSERT_TRUE(store.ok());
  EXPECT_EQ(Kept(**store), CountByReading(**store));
  ASSERT_TRUE(Commit(store->get(), 2, {MakeOutcome(1, OutcomeState::kSucceeded)}).ok());
  EXPECT_EQ(Kept(**store), CountByReading(**store));
  EXPECT_EQ(Kept(**store).by_state, (std::map<std::string, std::int64_t>{{"SUCCEEDED", 2}}));
}

}  // namespace
}  // namespace msgx
