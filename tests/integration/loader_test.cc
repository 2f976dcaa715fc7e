// `msgx dev load` against a real mailbox: every corpus file arrives as one
// row, SEQNs are unique (also across loads), the generated schedule is the
// first row and creates every flight the FLOPs refer to, and dates are moved
// to today/tomorrow in airport time.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "base/clock.h"
#include "migrations/migrator.h"
#include "stream/capture/mailbox_schema.h"
#include "tests/support/servers.h"
#include "tools/corpus_loader.h"

namespace msgx::app {
namespace {

namespace fs = std::filesystem;

// 2026-11-30T02:00:00Z = 30NOV26 10:00 in Asia/Shanghai.
constexpr MicrosSinceEpoch kNow = 1796004000LL * 1000000;

std::map<std::string, std::string> ReadCorpus() {
  std::map<std::string, std::string> files;
  for (const auto& e : fs::directory_iterator(MSGX_CORPUS_DIR)) {
    if (e.path().extension() != ".xml") continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    files[e.path().filename().string()] = ss.str();
  }
  return files;
}

// What the loader may change, blanked: SEQN, DTTM and date tokens.
std::string Normalize(const std::string& xml) {
  static const std::regex seqn("<SEQN>[^<]*</SEQN>");
  static const std::regex dttm("<DTTM>[^<]*</DTTM>");
  static const std::regex date(
      R"(\b[0-9]{2}(JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)[0-9]{2}([0-9]{4})?\b)");
  std::string s = std::regex_replace(xml, seqn, "<SEQN/>");
  s = std::regex_replace(s, dttm, "<DTTM/>");
  return std::regex_replace(s, date, "DATE");
}

std::vector<std::string> All(const std::string& text, const std::regex& re, int group = 0) {
  std::vector<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator();
       ++it) {
    out.push_back((*it)[group].str());
  }
  return out;
}

class LoaderTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pg_ = testing::PgServer::Start().release();
    pg_->CreateDatabase("aodb");
    pg_->Psql("aodb", kLocalMailboxDdl);
  }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }
  void SetUp() override { pg_->Psql("aodb", "TRUNCATE cminmsgs RESTART IDENTITY"); }

  static Result<LoadPlan> Load(MicrosSinceEpoch now = kNow) {
    ManualClock clock(now);
    return LoadCorpus(MSGX_CORPUS_DIR, pg_->Url("aodb"), "cminmsgs", "Asia/Shanghai", clock);
  }

  static testing::PgServer* pg_;
};

testing::PgServer* LoaderTest::pg_ = nullptr;

TEST_F(LoaderTest, EveryCorpusFileArrivesAsOneRowAfterTheSchedule) {
  std::map<std::string, std::string> corpus = ReadCorpus();
  ASSERT_EQ(corpus.size(), 172u);
  Result<LoadPlan> plan = Load();
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();

  EXPECT_EQ(pg_->Psql("aodb", "SELECT count(*) FROM cminmsgs"),
            std::to_string(corpus.size() + 1) + "\n");
  EXPECT_EQ(pg_->Psql("aodb",
                      "SELECT count(*) FROM cminmsgs WHERE cminmsgs_status <> 'VALID' "
                      "OR cminmsgs_date_processed IS NOT NULL"),
            "0\n");

  // The rows in id order are the plan's rows; each corpus file once.
  ASSERT_EQ(plan->rows.size(), corpus.size() + 1);
  EXPECT_EQ(plan->rows.front().source, "generated:SCHD-DNLD");
  std::multiset<std::string> sources;
  for (size_t i = 1; i < plan->rows.size(); ++i) sources.insert(plan->rows[i].source);
  for (const auto& [name, bytes] : corpus) {
    EXPECT_EQ(sources.count(name), 1u) << name;
  }
  // Stored bytes = planned bytes, compared by SHA-256 in one query.
  std::istringstream stored(
      pg_->Psql("aodb",
                "SELECT encode(sha256(convert_to(cminmsgs_clob_msg, 'UTF8')), 'hex') "
                "FROM cminmsgs ORDER BY cminmsgs_id"));
  for (size_t i = 0; i < plan->rows.size(); ++i) {
    const MailboxRow& row = plan->rows[i];
    std::string hash;
    std::getline(stored, hash);
    EXPECT_EQ(hash, Sha256Hex(row.xml)) << "row " << i + 1 << ": " << row.source;
    if (i > 0) {
      // Only SEQN, DTTM and dates changed.
      EXPECT_EQ(Normalize(row.xml), Normalize(corpus[row.source])) << row.source;
    }
  }

  // The malformed message is still malformed: </MSG> twice.
  for (const MailboxRow& row : plan->rows) {
    if (row.source != "ABNR-ADD-1.xml") continue;
    EXPECT_EQ(All(row.xml, std::regex("</MSG>")).size(), 2u);
  }
}

TEST_F(LoaderTest, SeqnsAreUniqueAndMatchTheMessages) {
  ASSERT_TRUE(Load().ok());
  EXPECT_EQ(pg_->Psql("aodb",
                      "SELECT count(*) = count(DISTINCT cminmsgs_subsystem_sequence) "
                      "FROM cminmsgs"),
            "t\n");
  // Column and META agree, and META's other fields fill the columns.
  EXPECT_EQ(
      pg_->Psql(
          "aodb",
          "SELECT count(*) FROM cminmsgs WHERE cminmsgs_clob_msg NOT LIKE "
          "'%<SEQN>' || cminmsgs_subsystem_sequence || '</SEQN>%' "
          "OR cminmsgs_clob_msg NOT LIKE '%<TYPE>' || cminmsgs_subsystem_type || '</TYPE>%' "
          "OR cminmsgs_clob_msg NOT LIKE '%<STYP>' || cminmsgs_subsystem_subtype || '</STYP>%' "
          "OR cminmsgs_subsystem_name <> 'AODB' "
          "OR cminmsgs_clob_msg NOT LIKE '%<DTTM>' || "
          "to_char(cminmsgs_subsystem_date_sent, 'YYYYMMDDHH24MISS') || '</DTTM>%'"),
      "0\n");
  // A second load continues the sequence: still every message new.
  ASSERT_TRUE(Load(kNow + 60'000'000).ok());
  EXPECT_EQ(pg_->Psql("aodb",
                      "SELECT count(*), count(DISTINCT cminmsgs_subsystem_sequence), "
                      "min(cminmsgs_subsystem_sequence), max(cminmsgs_subsystem_sequence) "
                      "FROM cminmsgs"),
            "346|346|1|346\n");
}

TEST_F(LoaderTest, ScheduleComesFirstAndNamesEveryFlopFlight) {
  Result<LoadPlan> plan = Load();
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  std::string first =
      pg_->Psql("aodb",
                "SELECT cminmsgs_subsystem_type || '-' || cminmsgs_subsystem_subtype "
                "FROM cminmsgs ORDER BY cminmsgs_id LIMIT 1");
  EXPECT_EQ(first, "SCHD-DNLD\n");
  std::string schedule =
      pg_->Psql("aodb", "SELECT cminmsgs_clob_msg FROM cminmsgs ORDER BY cminmsgs_id LIMIT 1");

  std::set<std::string> flop_flids;
  for (const auto& [name, bytes] : ReadCorpus()) {
    if (name.rfind("FLOP-", 0) != 0) continue;
    for (const std::string& f : All(bytes, std::regex("<FLID>([^<]+)</FLID>"), 1)) {
      flop_flids.insert(f);
    }
  }
  ASSERT_FALSE(flop_flids.empty());
  std::vector<std::string> fltrs = All(schedule, std::regex("<FLTR>[\\s\\S]*?</FLTR>"));
  EXPECT_EQ(fltrs.size(), flop_flids.size());
  EXPECT_NE(schedule.find("<RECS>" + std::to_string(flop_flids.size()) + "</RECS>"),
            std::string::npos);
  for (const std::string& flid : flop_flids) {
    EXPECT_NE(schedule.find("<FLID>" + flid + "</FLID>"), std::string::npos) << flid;
  }
  for (const std::string& fltr : fltrs) {
    for (const char* field : {"FLID", "ALCD", "FLNO", "MVIN", "SODT", "FLTY", "FLIN", "ACFT"}) {
      EXPECT_TRUE(
          std::regex_search(fltr, std::regex(std::string("<") + field + ">[^<]+</" + field + ">")))
          << field << " missing in\n"
          << fltr;
    }
    // SODT today or tomorrow (airport time of kNow: 30 Nov 2026).
    EXPECT_TRUE(std::regex_search(fltr, std::regex("<SODT>(30NOV26|01DEC26)[0-9]{4}</SODT>")))
        << fltr;
  }
}

TEST_F(LoaderTest, EveryDateIsTodayOrTomorrow) {
  Result<LoadPlan> plan = Load();
  ASSERT_TRUE(plan.ok());
  std::string all = pg_->Psql("aodb",
                              "SELECT string_agg(cminmsgs_clob_msg, '' ORDER BY cminmsgs_id) "
                              "FROM cminmsgs");
  std::regex date(
      R"(\b([0-9]{2}(JAN|FEB|MAR|APR|MAY|JUN|JUL|AUG|SEP|OCT|NOV|DEC)[0-9]{2})([0-9]{4})?\b)");
  std::set<std::string> days;
  for (const std::string& d : All(all, date, 1)) days.insert(d);
  EXPECT_EQ(days, (std::set<std::string>{"30NOV26", "01DEC26"}));
  std::set<std::string> dttm_days;
  for (const std::string& d : All(all, std::regex("<DTTM>([0-9]{8})[0-9]{6}</DTTM>"), 1)) {
    dttm_days.insert(d);
  }
  EXPECT_EQ(dttm_days, (std::set<std::string>{"20261130"}));
  // The last message was sent "now" (10:00:00 airport time).
  EXPECT_EQ(plan->rows.back().dttm, "20261130100000");
}

}  // namespace
}  // namespace msgx::app
