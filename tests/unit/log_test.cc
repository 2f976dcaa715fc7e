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
  EXPECT_NE(out.find("\"level\":\"warning\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"component\":\"logtest\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"msg\":\"body \\\"differs\\\"\\n\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"trace\":\"4711\"}"), std::string::npos) << out;
}

}  // namespace
}  // namespace msgx
