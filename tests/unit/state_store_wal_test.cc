// The state store's bound on its write-ahead logs (StateStore::Options::
// max_wal_bytes, docs/commit-protocol.md#the-write-ahead-log): a column
// family written once and then left quiet must not keep every later log.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "state/state_store.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT
namespace fs = std::filesystem;

// The logs' bytes now. RocksDB deletes obsolete logs in the background, so
// a log listed here may be gone before its size is read: it counts as 0.
std::uintmax_t WalBytes(const std::string& dir) {
  std::uintmax_t total = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".log") continue;
    std::error_code gone;
    const std::uintmax_t size = fs::file_size(e.path(), gone);
    if (!gone) total += size;
  }
  return total;
}

TEST(StateStoreWalTest, TheWriteAheadLogStaysNearItsBound) {
  TempDir dir;
  const std::string path = dir.path() + "/state";
  // Synced, as the service writes: the writer then leaves RocksDB's flushes
  // the time they take on a busy machine too (an unsynced writer in a loop
  // outran them by up to 18 MiB under load).
  StateStore::Options options;
  options.sync = true;
  options.max_wal_bytes = 1 << 20;
  auto store = StateStore::Open(path, options);
  ASSERT_TRUE(store.ok()) << store.status().ToString();
  // 32 MiB in 512 batches; the identity column family gets one binding in
  // the first batch and nothing after, as a quiet column family does.
  const std::string filler(64 << 10, 'x');
  for (std::int64_t b = 0; b < 512; ++b) {
    BatchWrite w;
    if (b == 0) w.bindings["AODB|FLOP|STND|1"] = IdentityBinding{"AODB|FLOP|STND|1", 1, "h", 0};
    Outcome o;
    o.mailbox_id = b + 1;
    o.log_offset = b;
    o.last_error = filler;
    w.outcomes[o.mailbox_id] = o;
    w.meta.applied_offset = b;
    ASSERT_TRUE((*store)->Commit(w).ok());
  }
  // Without the bound every log since the binding is kept (32 MiB); with it
  // RocksDB flushes the quiet family and drops the old logs. The flushes run
  // in the background and lag the writes, so the check is loose: half of
  // what is kept without the bound.
  EXPECT_LT(WalBytes(path), 16u << 20);
  // Nothing is lost by the flushes.
  auto binding = (*store)->GetBinding("AODB|FLOP|STND|1");
  ASSERT_TRUE(binding.ok() && binding->has_value());
  EXPECT_EQ((*binding)->mailbox_id, 1);
  auto last = (*store)->GetOutcome(512);
  ASSERT_TRUE(last.ok() && last->has_value());
  EXPECT_EQ((*last)->last_error, filler);
}

}  // namespace
}  // namespace msgx
