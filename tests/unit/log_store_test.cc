#include "state/log_store.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <string>

#include "state/log_reader.h"
#include "state/log_record.h"

namespace msgx {
namespace {

namespace fs = std::filesystem;
using std::chrono::seconds;

class LogStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("msgx-log-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string LogDir() const { return (dir_ / "log").string(); }
  std::unique_ptr<LogStore> OpenStore() {
    auto s = LogStore::Open(LogDir(), &clock_);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  static LogRecordData Msg(std::int64_t id) {
    return LogRecordData::Message(id, "<MSG>" + std::to_string(id) + "</MSG>", 1000 * id);
  }

  static CaptureProgress Wm(std::int64_t watermark) {
    CaptureProgress p;
    p.watermark = watermark;
    return p;
  }

  fs::path dir_;
  ManualClock clock_{1'700'000'000'000'000};
};

TEST_F(LogStoreTest, EmptyLogHasNoOffsetsAndNoProgress) {
  auto store = OpenStore();
  EXPECT_EQ(store->next_offset(), 0u);
  EXPECT_FALSE(store->last_offset().has_value());
  EXPECT_FALSE(store->capture_progress().has_value());
  EXPECT_EQ(store->log_uuid().size(), 36u);
}

TEST_F(LogStoreTest, ReopensALogWithProgressButNoRecords) {
  {
    auto store = OpenStore();
    ASSERT_TRUE(store->Append({}, Wm(7)).ok());
  }
  auto store = OpenStore();
  EXPECT_EQ(store->next_offset(), 0u);
  EXPECT_EQ(store->capture_progress()->watermark, 7);
}

TEST_F(LogStoreTest, WatermarkNeverMovesBack) {
  auto store = OpenStore();
  ASSERT_TRUE(store->Append({}, Wm(7)).ok());
  std::vector<LogRecordData> a{Msg(3)};
  auto r = store->Append(a, Wm(6));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInternal);
  EXPECT_EQ(store->next_offset(), 0u);
}

TEST_F(LogStoreTest, OffsetsAreDenseFromZero) {
  auto store = OpenStore();
  CaptureProgress p;
  std::vector<LogRecordData> a{Msg(1), Msg(2), Msg(3)};
  p.watermark = 3;
  auto first = store->Append(a, p);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 0u);
  std::vector<LogRecordData> b{Msg(4), Msg(5)};
  p.watermark = 5;
  first = store->Append(b, p);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(*first, 3u);
  EXPECT_EQ(*store->last_offset(), 4u);

  std::vector<LogEntry> entries;
  ASSERT_TRUE(store->Read(0, 100, &entries).ok());
  ASSERT_EQ(entries.size(), 5u);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].offset, i);
    EXPECT_EQ(entries[i].record()->mailbox_id(), static_cast<std::int64_t>(i + 1));
  }
}

TEST_F(LogStoreTest, IteratesRangesInOffsetOrderAcrossByteBoundaries) {
  auto store = OpenStore();
  std::vector<LogRecordData> many;
  many.reserve(300);
  for (int i = 0; i < 300; ++i) many.push_back(Msg(i + 1));
  ASSERT_TRUE(store->Append(many, Wm(300)).ok());
  auto it = store->NewIterator(250, 260);
  std::uint64_t expect = 250;
  for (; it->Valid(); it->Next(), ++expect) {
    EXPECT_EQ(it->offset(), expect);
    EXPECT_EQ(it->record()->mailbox_id(), static_cast<std::int64_t>(expect + 1));
  }
  EXPECT_TRUE(it->status().ok());
  EXPECT_EQ(expect, 260u);
}

// The fold's cursor (state/log_cursor.h) keeps its iterator across reads:
// each read must still see what was appended before it, and may go back.
TEST_F(LogStoreTest, ACursorSeesWhatWasAppendedSinceItsLastRead) {
  auto store = OpenStore();
  auto cursor = store->NewCursor();
  std::vector<LogEntry> entries;
  ASSERT_TRUE(cursor->Read(0, 10, &entries).ok());
  EXPECT_TRUE(entries.empty());

  std::vector<LogRecordData> a{Msg(1), Msg(2), Msg(3)};
  ASSERT_TRUE(store->Append(a, Wm(3)).ok());
  ASSERT_TRUE(cursor->Read(0, 2, &entries).ok());
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].offset, 1u);

  std::vector<LogRecordData> b{Msg(4), Msg(5)};
  ASSERT_TRUE(store->Append(b, Wm(5)).ok());
  entries.clear();
  ASSERT_TRUE(cursor->Read(2, 10, &entries).ok());
  ASSERT_EQ(entries.size(), 3u);
  for (std::size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ(entries[i].offset, i + 2);
    EXPECT_EQ(entries[i].record()->mailbox_id(), static_cast<std::int64_t>(i + 3));
  }

  entries.clear();
  ASSERT_TRUE(cursor->Read(1, 1, &entries).ok());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_EQ(entries[0].record()->mailbox_id(), 2);
  entries.clear();
  ASSERT_TRUE(cursor->Read(5, 10, &entries).ok());
  EXPECT_TRUE(entries.empty());

  // Scan visits the same records without copies, and stops at an error.
  std::vector<std::int64_t> ids;
  auto visit = [&](std::uint64_t offset, const fb::LogRecord& r) {
    if (offset == 4) return Status::Internal("stop");
    ids.push_back(r.mailbox_id());
    return Status::Ok();
  };
  EXPECT_EQ(cursor->Scan(1, 10, visit).message(), "stop");
  EXPECT_EQ(ids, (std::vector<std::int64_t>{2, 3, 4}));
  std::vector<LogRecordData> c{Msg(6)};
  ASSERT_TRUE(store->Append(c, Wm(6)).ok());
  ids.clear();
  ASSERT_TRUE(cursor->Scan(5, 10, visit).ok());
  EXPECT_EQ(ids, (std::vector<std::int64_t>{6}));
}

TEST_F(LogStoreTest, KeepsRawBytesAndFieldsExactly) {
  auto store = OpenStore();
  // An embedded NUL must survive too: build the string with its length.
  const char bytes[] = "\xEF\xBB\xBF<?xml version=\"1.0\"?><MSG>\xE4\xB8\xAD\0x</MSG>";
  std::string raw(bytes, sizeof(bytes) - 1);
  raw.push_back('\0');
  std::vector<LogRecordData> recs{LogRecordData::Message(42, raw, std::nullopt, /*late=*/true)};
  ASSERT_TRUE(store->Append(recs, Wm(42)).ok());
  std::vector<LogEntry> entries;
  ASSERT_TRUE(store->Read(0, 1, &entries).ok());
  MicrosSinceEpoch t = 0;
  auto back = ToLogRecordData(entries[0].bytes, &t);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, recs[0]);
  EXPECT_EQ(t, clock_.NowMicros());
}

TEST_F(LogStoreTest, AppendTimesNeverDecrease) {
  auto store = OpenStore();
  std::vector<LogRecordData> a{Msg(1)};
  ASSERT_TRUE(store->Append(a, Wm(1)).ok());
  clock_.Set(clock_.NowMicros() - 5'000'000);  // the wall clock steps back
  std::vector<LogRecordData> b{Msg(2)};
  ASSERT_TRUE(store->Append(b, Wm(2)).ok());
  std::vector<LogEntry> e;
  ASSERT_TRUE(store->Read(0, 2, &e).ok());
  EXPECT_LE(e[0].record()->append_micros(), e[1].record()->append_micros());
}

// A forward jump of the host clock does not pin the log's time (the fold's
// "now") in the future: appends follow the steady clock until the host
// clock is back in step.
TEST_F(LogStoreTest, AForwardJumpOfTheHostClockIsBounded) {
  auto store = OpenStore();
  const MicrosSinceEpoch t0 = clock_.NowMicros();
  ASSERT_TRUE(store->Append(std::vector<LogRecordData>{Msg(1)}, Wm(1)).ok());
  clock_.Advance(std::chrono::seconds(2));
  clock_.Set(clock_.NowMicros() + 10LL * 24 * 3'600'000'000);  // ten days ahead
  ASSERT_TRUE(store->Append(std::vector<LogRecordData>{Msg(2)}, Wm(2)).ok());
  clock_.Advance(std::chrono::seconds(3));
  ASSERT_TRUE(store->Append(std::vector<LogRecordData>{Msg(3)}, Wm(3)).ok());
  clock_.Set(t0 + 6'000'000);  // the host clock corrected back
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(store->Append(std::vector<LogRecordData>{Msg(4)}, Wm(4)).ok());
  // A jump within the tolerance is followed as it is.
  clock_.Set(clock_.NowMicros() + 30'000'000);
  ASSERT_TRUE(store->Append(std::vector<LogRecordData>{Msg(5)}, Wm(5)).ok());
  std::vector<LogEntry> e;
  ASSERT_TRUE(store->Read(0, 5, &e).ok());
  ASSERT_EQ(e.size(), 5u);
  EXPECT_EQ(e[0].record()->append_micros(), t0);
  EXPECT_EQ(e[1].record()->append_micros(), t0 + 2'000'000);  // the steady clock's time
  EXPECT_EQ(e[2].record()->append_micros(), t0 + 5'000'000);
  EXPECT_EQ(e[3].record()->append_micros(), t0 + 7'000'000);  // the host clock again
  EXPECT_EQ(e[4].record()->append_micros(), t0 + 37'000'000);
}

// A jump while msgx is stopped: the reopened store has no steady-clock
// reference of its own, so the mailbox server's clock bounds it.
TEST_F(LogStoreTest, AJumpWhileStoppedIsBoundedByTheReferenceClock) {
  const MicrosSinceEpoch t0 = clock_.NowMicros();
  {
    auto store = OpenStore();
    ASSERT_TRUE(store->Append(std::vector<LogRecordData>{Msg(1)}, Wm(1)).ok());
  }
  clock_.Set(t0 + 3LL * 3'600'000'000);  // stopped; three hours ahead at the restart
  auto store = OpenStore();
  store->ObserveReferenceClock(t0 + 10'000'000);  // the mailbox server: ten seconds on
  clock_.Advance(std::chrono::seconds(1));
  ASSERT_TRUE(store->Append(std::vector<LogRecordData>{Msg(2)}, Wm(2)).ok());
  std::vector<LogEntry> e;
  ASSERT_TRUE(store->Read(0, 2, &e).ok());
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[1].record()->append_micros(), t0 + 11'000'000);
}

TEST_F(LogStoreTest, ReopenKeepsRecordsProgressAndUuid) {
  std::string uuid;
  CaptureProgress p;
  p.watermark = 10;
  p.late_captured = 2;
  p.skipped[4] = SkippedRange{4, 6, 111, SkipReason::kTransactionsEnded, 0};
  p.skipped[9] = SkippedRange{9, 9, 222, SkipReason::kCommitDelay, 0};
  p.aged_out[2] = SkippedRange{2, 2, 50, SkipReason::kCommitDelay, 99};
  {
    auto store = OpenStore();
    uuid = store->log_uuid();
    std::vector<LogRecordData> recs{Msg(1), Msg(3), Msg(7), Msg(8), Msg(10)};
    ASSERT_TRUE(store->Append(recs, p).ok());
    // Destroyed without any shutdown call: every append was synced.
  }
  auto store = OpenStore();
  EXPECT_EQ(store->log_uuid(), uuid);
  EXPECT_EQ(store->next_offset(), 5u);
  ASSERT_TRUE(store->capture_progress().has_value());
  EXPECT_EQ(*store->capture_progress(), p);

  // A shrinking skipped set is persisted as such (the diff deletes keys).
  CaptureProgress q = p;
  q.skipped.erase(9);
  q.late_captured = 3;
  std::vector<LogRecordData> late{LogRecordData::Message(9, "late", std::nullopt, true)};
  ASSERT_TRUE(store->Append(late, q).ok());
  store.reset();
  store = OpenStore();
  EXPECT_EQ(*store->capture_progress(), q);
  EXPECT_EQ(store->next_offset(), 6u);
}

TEST_F(LogStoreTest, ProgressAndRecordsLandInOneBatch) {
  // The only writes are WriteBatches; a failed append leaves both untouched.
  auto store = OpenStore();
  std::vector<LogRecordData> a{Msg(1)};
  CaptureProgress p = Wm(1);
  p.skipped[5] = SkippedRange{5, 5, 1, SkipReason::kCommitDelay, 0};
  ASSERT_TRUE(store->Append(a, p).ok());
  // A secondary sees record and progress together after one catch-up.
  auto reader = LogReader::OpenSecondary(LogDir(), (dir_ / "sec").string());
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  EXPECT_EQ((*reader)->next_offset(), 1u);
  EXPECT_EQ(*(*reader)->capture_progress(), p);
}

TEST_F(LogStoreTest, SecondaryReadsWhatThePrimaryWrites) {
  auto store = OpenStore();
  std::vector<LogRecordData> a{Msg(1), Msg(2)};
  ASSERT_TRUE(store->Append(a, Wm(2)).ok());

  auto opened = LogReader::OpenSecondary(LogDir(), (dir_ / "sec").string());
  ASSERT_TRUE(opened.ok()) << opened.status().ToString();
  auto& reader = *opened;
  EXPECT_EQ(reader->log_uuid(), store->log_uuid());
  EXPECT_EQ(reader->next_offset(), 2u);

  // Later appends appear after CatchUp(), while the primary stays open.
  std::vector<LogRecordData> b{Msg(3)};
  ASSERT_TRUE(store->Append(b, Wm(3)).ok());
  ASSERT_TRUE(reader->CatchUp().ok());
  EXPECT_EQ(reader->next_offset(), 3u);
  EXPECT_EQ(reader->capture_progress()->watermark, 3);
  std::vector<LogEntry> e;
  ASSERT_TRUE(reader->Read(0, 10, &e).ok());
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[2].record()->mailbox_id(), 3);
}

TEST_F(LogStoreTest, SecondaryOfMissingLogIsNotFound) {
  auto r = LogReader::OpenSecondary((dir_ / "nope").string(), (dir_ / "sec").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kNotFound);
}

TEST_F(LogStoreTest, SecondPrimaryIsRefused) {
  auto store = OpenStore();
  auto again = LogStore::Open(LogDir(), &clock_);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().error_class(), ErrorClass::kInfra);
}

TEST_F(LogStoreTest, CommandsAreIndexedByTheirId) {
  {
    auto store = OpenStore();
    std::vector<LogRecordData> m{Msg(1)};
    ASSERT_TRUE(store->Append(m, Wm(1)).ok());
    CommandData c{ReplayArgs{{5, 6}}, "alice", 17, 123};
    CommandData q{QuarantineArgs{3, "crashed twice"}, "msgx:poison", 0, 0};
    std::vector<LogRecordData> cmds{LogRecordData::Command(c), LogRecordData::Command(q)};
    auto first = store->AppendCommands(cmds);
    ASSERT_TRUE(first.ok());
    EXPECT_EQ(*first, 1u);
  }
  auto store = OpenStore();
  EXPECT_EQ(store->last_command_id(), 17);
  auto off = store->CommandOffset(17);
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(*off, std::optional<std::uint64_t>(1));
  EXPECT_FALSE(store->CommandOffset(18)->has_value());
  // The capture progress is untouched by command appends.
  EXPECT_EQ(store->capture_progress()->watermark, 1);

  std::vector<LogEntry> e;
  ASSERT_TRUE(store->Read(1, 2, &e).ok());
  auto c = ToLogRecordData(e[0].bytes);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->kind, fb::RecordKind::COMMAND);
  EXPECT_EQ(std::get<ReplayArgs>(c->command->args).mailbox_ids, (std::vector<std::int64_t>{5, 6}));
  auto q = ToLogRecordData(e[1].bytes);
  EXPECT_EQ(std::get<QuarantineArgs>(q->command->args).reason, "crashed twice");
  EXPECT_EQ(std::get<QuarantineArgs>(q->command->args).sub, -1);  // the whole record
}

// A quarantine of one message of a replay keeps its sub through the log.
TEST(LogRecordTest, AQuarantinedReplayMessageKeepsItsSub) {
  const LogRecordData q =
      LogRecordData::Command(CommandData{QuarantineArgs{12, "crashed", 2}, "msgx:crash-guard"});
  auto back = ToLogRecordData(EncodeLogRecord(q, 5));
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, q);
  EXPECT_EQ(std::get<QuarantineArgs>(back->command->args).sub, 2);
}

// A RocksDB iterator's value may start anywhere; FlatBuffers must not read
// it in place there (base/aligned_bytes.h).
TEST(LogRecordTest, ARecordAtAnOddAddressIsReadFromAnAlignedCopy) {
  const std::string encoded =
      EncodeLogRecord(LogRecordData::Message(7, "<MSG>7</MSG>", 7000), /*append_micros=*/42);
  alignas(8) std::array<char, 512> buf{};
  ASSERT_LT(encoded.size() + 1, buf.size());
  std::copy(encoded.begin(), encoded.end(), buf.begin() + 1);
  const std::string_view odd(buf.data() + 1, encoded.size());

  std::string storage;
  auto r = DecodeLogRecord(odd, &storage);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto* at = reinterpret_cast<const char*>(*r);
  EXPECT_TRUE(at >= storage.data() && at < storage.data() + storage.size())
      << "the record must be read from the aligned copy, not the odd address";
  EXPECT_EQ((*r)->mailbox_id(), 7);
  EXPECT_EQ((*r)->append_micros(), 42);

  // Without storage, odd bytes are refused rather than read in place.
  auto refused = DecodeLogRecord(odd, nullptr);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().error_class(), ErrorClass::kInternal);

  // Aligned bytes are read where they are, with no copy.
  std::string unused;
  auto in_place = DecodeLogRecord(encoded, &unused);
  ASSERT_TRUE(in_place.ok());
  EXPECT_TRUE(unused.empty());
  EXPECT_EQ((*in_place)->mailbox_id(), 7);
}

TEST(LogRecordTest, CorruptBytesAreAStatusNotACrash) {
  std::string storage;
  auto r = DecodeLogRecord("not a flatbuffer at all", &storage);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kInternal);
}

}  // namespace
}  // namespace msgx
