// The log's command index (state/log_layout.h, docs/fold.md#the-command-index):
// every append lists its command records; a log an older msgx appended to
// without listing them is read to its end from `upto` by the fold's source,
// and indexed by the next writable open.
#include <gtest/gtest.h>
#include <rocksdb/db.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "state/log_layout.h"
#include "state/log_reader.h"
#include "state/log_record.h"
#include "state/log_store.h"
#include "stream/fold/log_fold_source.h"
#include "tests/unit/fold_fakes.h"

namespace msgx {
namespace {

using namespace msgx::testing;  // NOLINT

LogRecordData Msg(std::int64_t id) {
  return LogRecordData::Message(id, "<MSG>" + std::to_string(id) + "</MSG>", 1000 * id);
}

CaptureProgress Wm(std::int64_t watermark) {
  CaptureProgress p;
  p.watermark = watermark;
  return p;
}

LogRecordData Quarantine(std::uint64_t offset, const std::string& reason) {
  return LogRecordData::Command(CommandData{QuarantineArgs{offset, reason}, "msgx:poison", 0, 0});
}

// Appends a command record at the log's end the way an msgx from before the
// index did: the record alone, no index entry, no `upto`.
void AppendUnindexed(const std::string& log_dir, std::uint64_t offset, const LogRecordData& r) {
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(LogStoreOptions(), log_dir, &raw).ok());
  std::unique_ptr<rocksdb::DB> db(raw);
  ASSERT_TRUE(db->Put(rocksdb::WriteOptions(), log_layout::RecordKey(offset),
                      EncodeLogRecord(r, 1'700'000'000'000'000))
                  .ok());
  ASSERT_TRUE(db->Close().ok());
}

// The quarantine index the fold's source builds through the reader, with
// and without the command index.
std::optional<std::string> QuarantineSeen(LogReader* reader, bool use_index, std::int64_t offset) {
  LogFoldSource source(
      [reader](std::uint64_t from, std::size_t max, std::vector<LogEntry>* out) {
        return reader->Read(from, max, out);
      },
      use_index ? CommandIndexFn([reader] { return reader->CommandIndex(); }) : nullptr);
  EXPECT_TRUE(source.BuildQuarantineIndex().ok());
  return source.QuarantineReason(offset, -1);
}

TEST(CommandIndexTest, ListsEveryCommandAndReadsWhatAnOlderMsgxAppended) {
  TempDir dir;
  const std::string log_dir = dir.path() + "/log";
  ManualClock clock(1'700'000'000'000'000);
  {
    auto store = LogStore::Open(log_dir, &clock);
    ASSERT_TRUE(store.ok());
    std::vector<LogRecordData> m{Msg(1), Msg(2), Msg(3)};
    ASSERT_TRUE((*store)->Append(m, Wm(3)).ok());
    std::vector<LogRecordData> c{Quarantine(1, "first")};
    ASSERT_TRUE((*store)->AppendCommands(c).ok());  // offset 3
    std::vector<LogRecordData> m2{Msg(4)};
    ASSERT_TRUE((*store)->Append(m2, Wm(4)).ok());  // offset 4
    auto index = (*store)->CommandIndex();
    ASSERT_TRUE(index.ok());
    EXPECT_EQ(index->offsets, (std::vector<std::uint64_t>{3}));
    EXPECT_EQ(index->upto, 5u);
  }
  // An older msgx appends a quarantine at offset 5 without indexing it.
  AppendUnindexed(log_dir, 5, Quarantine(2, "second"));
  {
    auto reader = LogReader::OpenSecondary(log_dir, dir.path() + "/sec");
    ASSERT_TRUE(reader.ok());
    auto index = (*reader)->CommandIndex();
    ASSERT_TRUE(index.ok());
    EXPECT_EQ(index->offsets, (std::vector<std::uint64_t>{3}));
    EXPECT_EQ(index->upto, 5u);  // the record at 5 is past it: read in full
    for (bool use_index : {false, true}) {
      EXPECT_EQ(QuarantineSeen(reader->get(), use_index, 1), "first") << use_index;
      EXPECT_EQ(QuarantineSeen(reader->get(), use_index, 2), "second") << use_index;
    }
  }
  // The next writable open indexes it.
  auto store = LogStore::Open(log_dir, &clock);
  ASSERT_TRUE(store.ok());
  auto index = (*store)->CommandIndex();
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->offsets, (std::vector<std::uint64_t>{3, 5}));
  EXPECT_EQ(index->upto, 6u);
}

TEST(CommandIndexTest, ALogWrittenBeforeTheIndexIsIndexedAtOpen) {
  TempDir dir;
  const std::string log_dir = dir.path() + "/log";
  ManualClock clock(1'700'000'000'000'000);
  {
    auto store = LogStore::Open(log_dir, &clock);
    ASSERT_TRUE(store.ok());
  }
  // No index at all: every record appended as an older msgx did.
  AppendUnindexed(log_dir, 0, Msg(1));
  AppendUnindexed(log_dir, 1, Quarantine(0, "old"));
  AppendUnindexed(log_dir, 2, Msg(2));
  {
    auto reader = LogReader::OpenSecondary(log_dir, dir.path() + "/sec");
    ASSERT_TRUE(reader.ok());
    auto index = (*reader)->CommandIndex();
    ASSERT_TRUE(index.ok());
    EXPECT_TRUE(index->offsets.empty());
    EXPECT_EQ(index->upto, 0u);
    EXPECT_EQ(QuarantineSeen(reader->get(), true, 0), "old");
  }
  auto store = LogStore::Open(log_dir, &clock);
  ASSERT_TRUE(store.ok());
  auto index = (*store)->CommandIndex();
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->offsets, (std::vector<std::uint64_t>{1}));
  EXPECT_EQ(index->upto, 3u);
  // And appends go on indexing.
  std::vector<LogRecordData> c{Quarantine(2, "new")};
  ASSERT_TRUE((*store)->AppendCommands(c).ok());
  index = (*store)->CommandIndex();
  ASSERT_TRUE(index.ok());
  EXPECT_EQ(index->offsets, (std::vector<std::uint64_t>{1, 3}));
  EXPECT_EQ(index->upto, 4u);
}

}  // namespace
}  // namespace msgx
