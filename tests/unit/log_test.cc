#include "base/log.h"

#include <gtest/gtest.h>

namespace msgx {
namespace {

TEST(LogTest, UnknownLevelIsAConfigError) {
  Status s = InitLogging("loud");
  EXPECT_EQ(s.error_class(), ErrorClass::kConfig);
  EXPECT_NE(s.message().find("log.level"), std::string::npos);
}

TEST(LogTest, WritesOneJsonObjectPerLineWithComponentAndTrace) {
  ASSERT_TRUE(InitLogging("info").ok());
  ::testing::internal::CaptureStderr();
  Logger("logtest")->warn("{}", WithTrace("4711", "body \"differs\"\n"));
  Logger("logtest")->debug("hidden at info");
  std::string out = ::testing::internal::GetCapturedStderr();
  ASSERT_EQ(std::count(out.begin(), out.end(), '\n'), 1) << out;
  EXPECT_EQ(out.rfind("{\"ts\":\"", 0), 0u) << out;
  EXPECT_NE(out.find("\"level\":\"warn\","), std::string::npos) << out;
  EXPECT_NE(out.find("\"component\":\"logtest\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"msg\":\"body \\\"differs\\\"\\n\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"trace\":\"4711\"}"), std::string::npos) << out;
}

// One spelling of levels: each line says the level as log.level names it.
TEST(LogTest, LevelsAreSpelledAsTheConfigurationSpellsThem) {
  ASSERT_TRUE(InitLogging("trace").ok());
  ::testing::internal::CaptureStderr();
  Logger("logtest")->trace("t");
  Logger("logtest")->debug("d");
  Logger("logtest")->info("i");
  Logger("logtest")->warn("w");
  Logger("logtest")->error("e");
  Logger("logtest")->flush();
  std::string out = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(InitLogging("info").ok());
  for (const char* level : {"trace", "debug", "info", "warn", "error"}) {
    EXPECT_NE(out.find(std::string("\"level\":\"") + level + "\","), std::string::npos)
        << level << " in " << out;
    EXPECT_TRUE(InitLogging(level).ok()) << level;  // and log.level accepts it
  }
  EXPECT_EQ(out.find("warning"), std::string::npos) << out;
  ASSERT_TRUE(InitLogging("info").ok());
}

}  // namespace
}  // namespace msgx
