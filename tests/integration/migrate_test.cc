// The migrator against a real PostgreSQL: a fresh apply creates the tables of
// docs/schema.md, a rerun changes nothing, and a changed history is refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "migrations/migrator.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

namespace fs = std::filesystem;

const char* const kTables[] = {"proc_state", "proc_state_hst", "msg_event",
                               "ref_master", "flight_hst",     "pipeline",
                               "fold_batch", "msgx_command",   "schema_version"};

class MigrateTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pg_ = testing::PgServer::Start().release(); }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }

  // A fresh database per test.
  std::string FreshDb() {
    std::string name = ::testing::UnitTest::GetInstance()->current_test_info()->name();
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    pg_->CreateDatabase(name);
    db_ = name;
    return pg_->Url(name);
  }

  // A fresh database with every migration of the source tree applied.
  Result<MigrationReport> MigrateFreshDb() {
    return Migrator(kSourceMigrations).Migrate(FreshDb());
  }

  // A scratch copy of the migrations directory.
  fs::path CopyMigrations() {
    fs::path dir =
        fs::temp_directory_path() / ("msgx-migrations-" + std::to_string(::getpid()) + "-" + db_);
    fs::remove_all(dir);
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(kSourceMigrations)) {
      if (e.path().extension() == ".sql") fs::copy_file(e.path(), dir / e.path().filename());
    }
    scratch_.push_back(dir);
    return dir;
  }

  // Tables, columns and indexes of the public schema: what "changes nothing"
  // compares.
  std::string SchemaDump() {
    return pg_->Psql(db_,
                     "SELECT table_name || '.' || column_name || ':' || data_type "
                     "FROM information_schema.columns WHERE table_schema = 'public' "
                     "ORDER BY 1; SELECT indexname FROM pg_indexes "
                     "WHERE schemaname = 'public' ORDER BY 1;");
  }

  // The names of `table`'s indexes, sorted and joined by commas.
  std::string IndexesOf(const std::string& table) {
    return pg_->Psql(db_,
                     "SELECT string_agg(indexname, ',' ORDER BY indexname) "
                     "FROM pg_indexes WHERE tablename = '" +
                         table + "'");
  }

  void TearDown() override {
    for (const fs::path& d : scratch_) fs::remove_all(d);
  }

  static constexpr const char* kSourceMigrations = MSGX_SOURCE_DIR "/migrations";
  static testing::PgServer* pg_;
  std::string db_;
  std::vector<fs::path> scratch_;
};

testing::PgServer* MigrateTest::pg_ = nullptr;

TEST_F(MigrateTest, FreshApplyCreatesEveryTable) {
  Result<MigrationReport> r = MigrateFreshDb();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->already_applied, 0);
  ASSERT_FALSE(r->applied.empty());
  EXPECT_EQ(r->applied.front(), "V1__init.sql");
  for (const char* table : kTables) {
    EXPECT_EQ(pg_->Psql(db_, std::string("SELECT to_regclass('public.") + table + "') IS NOT NULL"),
              "t\n")
        << table;
  }
  EXPECT_EQ(pg_->Psql(db_,
                      "SELECT version || ' ' || name || ' ' || length(checksum) "
                      "FROM schema_version WHERE version = 1"),
            "1 V1__init.sql 64\n");
  // event_key is unique: the outbox's idempotence rests on it.
  pg_->Psql(db_,
            "INSERT INTO msg_event (event_key, target, event_type, state_version, payload_json, "
            "created_at) VALUES ('k1', 'KAFKA:msg', 'UPSERT', 7, '{}', now()) "
            "ON CONFLICT (event_key) DO NOTHING;"
            "INSERT INTO msg_event (event_key, target, event_type, state_version, payload_json, "
            "created_at) VALUES ('k1', 'KAFKA:msg', 'UPSERT', 7, '{}', now()) "
            "ON CONFLICT (event_key) DO NOTHING;");
  EXPECT_EQ(pg_->Psql(db_, "SELECT count(*) FROM msg_event"), "1\n");
}

TEST_F(MigrateTest, SecondRunChangesNothing) {
  std::string url = FreshDb();
  ASSERT_TRUE(Migrator(kSourceMigrations).Migrate(url).ok());
  std::string before = SchemaDump();
  std::string versions = pg_->Psql(db_, "SELECT version, checksum, applied_at FROM schema_version");
  Result<MigrationReport> again = Migrator(kSourceMigrations).Migrate(url);
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_TRUE(again->applied.empty());
  EXPECT_GE(again->already_applied, 1);
  EXPECT_EQ(SchemaDump(), before);
  EXPECT_EQ(pg_->Psql(db_, "SELECT version, checksum, applied_at FROM schema_version"), versions);
}

TEST_F(MigrateTest, TamperedChecksumIsRefused) {
  std::string url = FreshDb();
  fs::path dir = CopyMigrations();
  ASSERT_TRUE(Migrator(dir.string()).Migrate(url).ok());
  {
    std::ofstream f(dir / "V1__init.sql", std::ios::app);
    f << "\n-- an edit after the fact\n";
  }
  Result<MigrationReport> r = Migrator(dir.string()).Migrate(url);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kConfig);
  EXPECT_NE(r.status().message().find("V1__init.sql"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("checksum"), std::string::npos) << r.status().message();
}

TEST_F(MigrateTest, NewFileAppliesAndMissingAppliedFileIsRefused) {
  std::string url = FreshDb();
  fs::path dir = CopyMigrations();
  ASSERT_TRUE(Migrator(dir.string()).Migrate(url).ok());
  {
    std::ofstream f(dir / "V900__extra.sql");
    f << "CREATE TABLE extra_table (id INT PRIMARY KEY);\n";
  }
  Result<MigrationReport> r = Migrator(dir.string()).Migrate(url);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->applied, std::vector<std::string>{"V900__extra.sql"});
  EXPECT_EQ(pg_->Psql(db_, "SELECT to_regclass('public.extra_table') IS NOT NULL"), "t\n");

  fs::remove(dir / "V900__extra.sql");
  r = Migrator(dir.string()).Migrate(url);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().error_class(), ErrorClass::kConfig);
  EXPECT_NE(r.status().message().find("V900__extra.sql"), std::string::npos)
      << r.status().message();
}

TEST_F(MigrateTest, FailingFileLeavesNoTraceAndNamesTheFile) {
  std::string url = FreshDb();
  fs::path dir = CopyMigrations();
  {
    std::ofstream f(dir / "V901__broken.sql");
    f << "CREATE TABLE half_done (id INT);\nTHIS IS NOT SQL;\n";
  }
  Result<MigrationReport> r = Migrator(dir.string()).Migrate(url);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("V901__broken.sql"), std::string::npos)
      << r.status().message();
  // The real files went in; V901 rolled back entirely, its schema_version
  // row included.
  Result<std::vector<MigrationFile>> real = Migrator(kSourceMigrations).ListFiles();
  ASSERT_TRUE(real.ok());
  std::string versions;
  for (const MigrationFile& f : *real) {
    versions += (versions.empty() ? "" : ",") + std::to_string(f.version);
  }
  EXPECT_EQ(
      pg_->Psql(db_, "SELECT string_agg(version::text, ',' ORDER BY version) FROM schema_version"),
      versions + "\n");
  EXPECT_EQ(pg_->Psql(db_, "SELECT to_regclass('public.half_done') IS NULL"), "t\n");
}

// V9 (docs/schema.md#indexes-of-proc_state): the outcomes and the outbox
// carry only the indexes something reads, so the applier's inserts and the
// processed mark's settle pay no entry for nothing; and the dead-letter
// reads still find their rows through the partial indexes that replaced the
// whole-table ones.
TEST_F(MigrateTest, TheWritePathCarriesOnlyTheIndexesThatAreRead) {
  Result<MigrationReport> r = MigrateFreshDb();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(IndexesOf("proc_state"),
            "proc_state_archive_due_idx,proc_state_identity_key_idx,"
            "proc_state_mark_abandoned_idx,proc_state_mark_todo_idx,proc_state_pkey,"
            "proc_state_unfinished_idx\n");
  EXPECT_EQ(IndexesOf("msg_event"),
            "msg_event_batch_idx,msg_event_dead_idx,msg_event_event_key_key,"
            "msg_event_open_batch_idx,msg_event_pending_msg_idx,msg_event_pending_ref_idx,"
            "msg_event_pending_replayed_idx,msg_event_pending_schd_idx,msg_event_pkey,"
            "msg_event_sent_idx,msg_event_source_msg_idx\n");
  // The planner proves the partial predicates from the reads' own
  // conditions (a sequential scan would hide a predicate it cannot prove).
  auto plan = [&](const std::string& query) {
    return pg_->Psql(db_, "SET enable_seqscan = off; EXPLAIN (COSTS OFF) " + query);
  };
  EXPECT_NE(plan("SELECT count(*) FROM msg_event WHERE target = 'KAFKA:msg' AND state = 'DEAD'")
                .find("msg_event_dead_idx"),
            std::string::npos);
  EXPECT_NE(plan("SELECT msg_id FROM proc_state WHERE state = 'DEAD' ORDER BY msg_id")
                .find("proc_state_unfinished_idx"),
            std::string::npos);
}

// V10 (docs/schema.md#payload-compression): the JSON payloads are
// compressed with LZ4 (Debian's PostgreSQL is built with it), so a payload
// past the row's compression threshold is stored LZ4-compressed and reads
// back whole.
TEST_F(MigrateTest, PayloadsAreCompressedWithLz4) {
  Result<MigrationReport> r = MigrateFreshDb();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(pg_->Psql(db_,
                      "SELECT string_agg(attrelid::regclass || ':' || attcompression::text, ',' "
                      "ORDER BY attrelid::regclass::text) FROM pg_attribute "
                      "WHERE attname = 'payload_json' AND attrelid::regclass::text IN "
                      "('msg_event', 'ref_master', 'flight_hst')"),
            "flight_hst:l,msg_event:l,ref_master:l\n");
  const std::string payload = "'{\"flight\":\"' || repeat('CA1234 ', 1000) || '\"}'";
  pg_->Psql(db_,
            "INSERT INTO msg_event (event_key, target, event_type, state_version, payload_json, "
            "created_at) VALUES ('k', 'KAFKA:msg', 'UPSERT', 1, " +
                payload + ", now())");
  EXPECT_EQ(pg_->Psql(db_, "SELECT pg_column_compression(payload_json), payload_json = " + payload +
                               " FROM msg_event"),
            "lz4|t\n");
}

// V11 (docs/schema.md#indexes-of-proc_state): proc_state's identity index
// holds the outcomes not yet archived, so the ARCHIVED shadows, kept for
// good, no longer grow it; the look-up of docs/operations.md (finding a
// message by its identity) still finds every outcome of an identity, the
// live ones through that index and the archived ones through
// proc_state_hst's. And proc_state_hst keeps only the indexes something
// reads.
TEST_F(MigrateTest, TheIdentityIndexHoldsOnlyTheOutcomesNotYetArchived) {
  Result<MigrationReport> r = MigrateFreshDb();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  pg_->Psql(db_,
            "INSERT INTO proc_state (msg_id, state, identity_key) VALUES "
            "(1, 'ARCHIVED', 'FLOP#00000000000000aa'), (2, 'SUCCEEDED', 'FLOP#00000000000000aa'), "
            "(3, 'DEAD', 'FLOP#00000000000000bb');"
            "INSERT INTO proc_state_hst (msg_id, state, identity_key, archived_at) VALUES "
            "(1, 'SUCCEEDED', 'FLOP#00000000000000aa', now())");
  EXPECT_EQ(IndexesOf("proc_state_hst"),
            "proc_state_hst_archived_idx,proc_state_hst_identity_key_idx,proc_state_hst_pkey\n");
  // The index's predicate leaves the shadows out.
  EXPECT_EQ(pg_->Psql(db_,
                      "SELECT pg_get_expr(indpred, indrelid) FROM pg_index "
                      "WHERE indexrelid = 'proc_state_identity_key_idx'::regclass"),
            "((state)::text <> 'ARCHIVED'::text)\n");
  const std::string lookup =
      "SELECT msg_id, state FROM proc_state "
      "WHERE identity_key = 'FLOP#00000000000000aa' AND state <> 'ARCHIVED' "
      "UNION ALL SELECT msg_id, state FROM proc_state_hst "
      "WHERE identity_key = 'FLOP#00000000000000aa' ORDER BY msg_id";
  EXPECT_EQ(pg_->Psql(db_, lookup), "1|SUCCEEDED\n2|SUCCEEDED\n");
  const std::string plan =
      pg_->Psql(db_, "SET enable_seqscan = off; EXPLAIN (COSTS OFF) " + lookup);
  EXPECT_NE(plan.find("proc_state_identity_key_idx"), std::string::npos) << plan;
  EXPECT_NE(plan.find("proc_state_hst_identity_key_idx"), std::string::npos) << plan;
}

// V12 (docs/schema.md#vacuum-of-proc_state): proc_state, which keeps a
// shadow of every message for good, is vacuumed after a fixed number of
// dead row versions instead of a fifth of its rows, so its vacuums do not
// grow further apart as the shadows accumulate.
TEST_F(MigrateTest, TheOutcomesAreVacuumedAfterAFixedNumberOfDeadRows) {
  Result<MigrationReport> r = MigrateFreshDb();
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(pg_->Psql(db_,
                      "SELECT array_to_string(reloptions, ',') FROM pg_class "
                      "WHERE oid = 'proc_state'::regclass"),
            "autovacuum_vacuum_scale_factor=0,autovacuum_vacuum_threshold=200000\n");
  // The other tables keep PostgreSQL's defaults.
  EXPECT_EQ(
      pg_->Psql(db_,
                "SELECT count(*) FROM pg_class WHERE reloptions IS NOT NULL "
                "AND relnamespace = 'public'::regnamespace AND oid <> 'proc_state'::regclass"),
      "0\n");
}

TEST_F(MigrateTest, ConcurrentRunsApplyOnce) {
  std::string url = FreshDb();
  Result<MigrationReport> a = Status::Internal("not run");
  Result<MigrationReport> b = Status::Internal("not run");
  std::thread ta([&] { a = Migrator(kSourceMigrations).Migrate(url); });
  std::thread tb([&] { b = Migrator(kSourceMigrations).Migrate(url); });
  ta.join();
  tb.join();
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  Result<std::vector<MigrationFile>> files = Migrator(kSourceMigrations).ListFiles();
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(a->applied.size() + b->applied.size(), files->size());
  EXPECT_EQ(pg_->Psql(db_, "SELECT count(*) FROM schema_version"),
            std::to_string(files->size()) + "\n");
}

}  // namespace
}  // namespace msgx
