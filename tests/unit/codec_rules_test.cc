// Ignore rules, identity keys, split decode.
#include <gtest/gtest.h>

#include "codecs/identity_key.h"
#include "codecs/ignore_rules.h"
#include "tests/unit/codec_test_util.h"

namespace msgx::sis {
namespace {

using testing::ReadCorpus;
using testing::Shanghai;

TEST(CodecRules, IgnoreMatching) {
  auto rules = IgnoreRules::Parse({"LDM-*", "regn-*", "FLOP-acft"});
  ASSERT_TRUE(rules.ok());
  EXPECT_EQ(rules->Match("REGN", "ADD"), "regn-*");
  EXPECT_EQ(rules->Match("flop", "ACFT"), "FLOP-acft");
  EXPECT_EQ(rules->Match("FLOP", "STND"), std::nullopt);
  EXPECT_EQ(rules->Match("LDMX", "A"), std::nullopt);
  EXPECT_FALSE(IgnoreRules::Parse({"FLOP"}).ok());
  EXPECT_FALSE(IgnoreRules::Parse({"-*"}).ok());
  EXPECT_FALSE(IgnoreRules::Parse({"A-B-C"}).ok());
  EXPECT_EQ(IgnoreRules::Parse({"A B-*"}).status().error_class(), ErrorClass::kConfig);
}

TEST(CodecRules, IgnoredTypeWithBrokenBodyStillHasMeta) {
  // META decodes, the body would be UNSUPPORTED/MALFORMED: the split API
  // lets the caller match rules in between.
  std::string text = ReadCorpus("REGN-ADD-1.xml");
  text.replace(text.find("<RNUM>"), 6, "<XNUM>");
  text.replace(text.find("</RNUM>"), 7, "</XNUM>");
  SisDecoder d(Shanghai());
  auto env = d.DecodeEnvelope(text, InputOrigin::kUnicodeText);
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  auto rules = IgnoreRules::Parse({"LDM-*", "REGN-*", "RSTA-*", "EROR-*"});
  EXPECT_EQ(rules->Match(env->meta().type, env->meta().styp), "REGN-*");
  EXPECT_EQ(d.DecodeBody(std::move(env).value()).status().error_class(), ErrorClass::kMalformed);
  // An unknown type is matched before it would be UNSUPPORTED.
  std::string ldm = ReadCorpus("FLOP-ACFT-1.xml");
  ldm.replace(ldm.find("<TYPE>FLOP"), 10, "<TYPE>LDM ");
  auto e2 = d.DecodeEnvelope(ldm, InputOrigin::kUnicodeText);
  ASSERT_TRUE(e2.ok());
  EXPECT_EQ(rules->Match(e2->meta().type, e2->meta().styp), "LDM-*");
  EXPECT_EQ(d.DecodeBody(std::move(e2).value()).status().error_class(), ErrorClass::kUnsupported);
}

TEST(CodecRules, IdentityKey) {
  Meta m;
  m.sndr = "AODB";
  m.type = "FLOP";
  m.styp = "ACFT";
  m.seqn = "1243";
  m.dttm = "20021010090311";
  EXPECT_EQ(MetaIdentityKey(m, false), "AODB|FLOP|ACFT|1243");
  EXPECT_EQ(MetaIdentityKey(m, true), "AODB|FLOP|ACFT|1243|20021010");
  m.sndr = std::string(300, 'S');
  const std::string k = MetaIdentityKey(m, false);
  EXPECT_EQ(k.size(), 200u);
  EXPECT_EQ(k, MetaIdentityKey(m, false));
  EXPECT_EQ(k[183], '#');
  m.seqn = "1244";
  EXPECT_NE(k, MetaIdentityKey(m, false));
  // A cut never splits a UTF-8 character.
  std::string wide(101, 'a');
  for (int i = 0; i < 50; ++i) wide += "国";
  const std::string cjk = BoundKey(wide);
  EXPECT_LE(cjk.size(), 200u);
  EXPECT_EQ(cjk.substr(0, 101), std::string(101, 'a'));
  EXPECT_EQ((cjk.size() - 17 - 101) % 3, 0u);  // whole characters only
}

}  // namespace
}  // namespace msgx::sis
