// PlanCorpusLoad, the pure half of `msgx dev load`: order, SEQNs, dates and
// the generated schedule, without a database.
#include "tools/corpus_loader.h"

#include <gtest/gtest.h>

namespace msgx::app {
namespace {

std::string Flop(const std::string& styp, const std::string& flid, const std::string& ffid,
                 const std::string& payload) {
  return "<MSG><META><SNDR>AODB</SNDR><SEQN>1243</SEQN><DTTM>20021010090311</DTTM>"
         "<TYPE>FLOP</TYPE><STYP>" +
         styp + "</STYP></META><FLOP><FLID>" + flid + "</FLID><FFID>" + ffid + "</FFID>" + payload +
         "</FLOP></MSG>";
}

const LocalTime kNow{2026, 11, 30, 14, 0, 0};  // airport time

TEST(CorpusLoaderTest, ScheduleFirstDeletesLastSeqnsConsecutive) {
  std::vector<CorpusFile> files = {
      {"FLOP-FDEL-1.xml", Flop("FDEL", "15", "CA-CA101-A-12DEC031345-D", "<FDEL></FDEL>")},
      {"FLOP-STND-1.xml", Flop("STND", "16", "MU-MU5101-D-12DEC030930-I", "<STND>S1</STND>")},
      {"ABDG-ADD-1.xml",
       "<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>1</DTTM><TYPE>ABDG"
       "</TYPE><STYP>ADD</STYP></META></MSG>"}};
  LoadPlan plan = PlanCorpusLoad(files, kNow, 999998);
  ASSERT_EQ(plan.rows.size(), 4u);
  EXPECT_EQ(plan.rows[0].source, "generated:SCHD-DNLD");
  EXPECT_EQ(plan.rows[1].source, "ABDG-ADD-1.xml");
  EXPECT_EQ(plan.rows[2].source, "FLOP-STND-1.xml");
  EXPECT_EQ(plan.rows[3].source, "FLOP-FDEL-1.xml");
  // 999998, 999999, then the six-digit wrap to 1.
  EXPECT_EQ(plan.rows[0].seqn, 999998);
  EXPECT_EQ(plan.rows[1].seqn, 999999);
  EXPECT_EQ(plan.rows[2].seqn, 1);
  EXPECT_EQ(plan.rows[3].seqn, 2);
  EXPECT_NE(plan.rows[2].xml.find("<SEQN>1</SEQN>"), std::string::npos);
  // DTTM one second apart, the last one "now".
  EXPECT_EQ(plan.rows[0].dttm, "20261130135957");
  EXPECT_EQ(plan.rows[3].dttm, "20261130140000");
  EXPECT_EQ(plan.rows[3].sent_at, "2026-11-30 14:00:00");
  EXPECT_EQ(plan.rows[2].type, "FLOP");
  EXPECT_EQ(plan.rows[2].styp, "STND");
  EXPECT_EQ(plan.created_flids, (std::vector<std::string>{"16", "15"}));
}

TEST(CorpusLoaderTest, GeneratedFlightsComeFromTheFfidAndAreUpcoming) {
  std::vector<CorpusFile> files = {
      {"FLOP-A.xml", Flop("STND", "15", "CA-CA101-A-12DEC031345-D", "")},   // 13:45 passed
      {"FLOP-B.xml", Flop("STND", "16", "MU-MU5101-D-12DEC031530-I", "")},  // 15:30 to come
      {"FLOP-C.xml", Flop("STND", "77", "garbage", "")}};
  LoadPlan plan = PlanCorpusLoad(files, kNow, 1);
  const std::string& s = plan.rows[0].xml;
  EXPECT_NE(s.find("<RECS>3</RECS>"), std::string::npos);
  EXPECT_NE(s.find("<FLID>15</FLID>\n\t\t\t<ALCD>CA</ALCD>\n\t\t\t<FLNO>CA101</FLNO>\n\t\t\t"
                   "<MVIN>A</MVIN>\n\t\t\t<SODT>01DEC261345</SODT>"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("<FLNO>MU5101</FLNO>\n\t\t\t<MVIN>D</MVIN>\n\t\t\t<SODT>30NOV261530</SODT>"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("<FLIN>I</FLIN>"), std::string::npos);
  // No usable FFID: a synthetic flight, still with every required field.
  EXPECT_NE(s.find("<FLID>77</FLID>\n\t\t\t<ALCD>MX</ALCD>\n\t\t\t<FLNO>MX77</FLNO>"),
            std::string::npos)
      << s;
}

TEST(CorpusLoaderTest, DatesMoveToTodayAndTomorrowKeepingTheTime) {
  std::string body =
      "<DELY CODE=\"YY\" STRT=\"15DEC031605\" DURA=\"0200\">x</DELY><D>14DEC03</D>"
      "<N>B2574</N><X>A12DEC03</X><Y>31FEB031200</Y>";
  LoadPlan plan = PlanCorpusLoad(
      {{"FLOP-D.xml", Flop("DELY", "15", "CA-CA101-A-12DEC031345-D", body)}}, kNow, 1);
  const std::string& s = plan.rows[1].xml;
  EXPECT_NE(s.find("<FFID>CA-CA101-A-30NOV261345-D</FFID>"), std::string::npos) << s;
  EXPECT_NE(s.find("STRT=\"01DEC261605\""), std::string::npos) << s;
  EXPECT_NE(s.find("<D>01DEC26</D>"), std::string::npos) << s;
  // Not date tokens: inside a longer word, or not a calendar date.
  EXPECT_NE(s.find("<X>A12DEC03</X>"), std::string::npos) << s;
  EXPECT_NE(s.find("<Y>31FEB031200</Y>"), std::string::npos) << s;
  EXPECT_NE(s.find("<N>B2574</N>"), std::string::npos) << s;
}

TEST(CorpusLoaderTest, AirportLocalTimeUsesTheZone) {
  // 2026-11-30T18:30:00Z is 1 Dec 02:30 in Shanghai (UTC+8).
  Result<TimeZone> shanghai = TimeZone::Load("Asia/Shanghai");
  ASSERT_TRUE(shanghai.ok()) << shanghai.status().ToString();
  LocalTime t = AirportLocalTime(1796063400LL * 1000000, *shanghai);
  EXPECT_EQ(t.year, 2026);
  EXPECT_EQ(t.month, 12);
  EXPECT_EQ(t.day, 1);
  EXPECT_EQ(t.hour, 2);
  EXPECT_EQ(t.minute, 30);
  LocalTime utc = AirportLocalTime(1796063400LL * 1000000, TimeZone::Fixed("UTC", 0));
  EXPECT_EQ(utc.day, 30);
  EXPECT_EQ(utc.hour, 18);
  // West of UTC, across a year boundary, one second before midnight.
  LocalTime ny = AirportLocalTime(1798761599LL * 1000000, TimeZone::Fixed("X", -5 * 3600));
  EXPECT_EQ(ny.year, 2026);
  EXPECT_EQ(ny.month, 12);
  EXPECT_EQ(ny.day, 31);
  EXPECT_EQ(ny.hour, 18);
  EXPECT_EQ(ny.second, 59);
}

}  // namespace
}  // namespace msgx::app
