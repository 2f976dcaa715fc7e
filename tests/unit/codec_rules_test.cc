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

// Keys longer than their columns become prefix + "#" + hash, the same on
// every decode (docs/schema.md#bounded-values).
TEST(CodecRules, KeysAreBoundedToTheirColumns) {
  SisDecoder d(Shanghai());
  const std::string long_flid(300, '7');
  auto flop = d.Decode(testing::Flop("REMC", "<REMC>x</REMC>")
                           .replace(testing::Flop("REMC", "<REMC>x</REMC>").find("<FLID>15</FLID>"),
                                    15, "<FLID>" + long_flid + "</FLID>"),
                       InputOrigin::kUnicodeText);
  ASSERT_TRUE(flop.ok()) << flop.status().ToString();
  const std::string& flid = std::get<FlopBody>(flop->body).records.at(0).flid;
  EXPECT_EQ(flid.size(), kMaxFlidChars);
  EXPECT_EQ(flid, BoundKey(long_flid, kMaxFlidChars));
  EXPECT_EQ(flid.substr(0, 10), long_flid.substr(0, 10));

  std::string airl = ReadCorpus("AIRL-ADD-1.xml");
  const std::string long_key(300, 'K');
  airl.replace(airl.find("<ITOP>AB</ITOP>"), 15, "<ITOP>" + long_key + "</ITOP>");
  auto ref = d.Decode(airl, InputOrigin::kUnicodeText);
  ASSERT_TRUE(ref.ok()) << ref.status().ToString();
  const std::string& key = std::get<ReferenceBody>(ref->body).records.at(0).key;
  EXPECT_EQ(key.size(), kMaxReferenceKeyChars);
  EXPECT_EQ(key, BoundKey(long_key, kMaxReferenceKeyChars));
  // A key that fits is unchanged.
  auto small = d.Decode(ReadCorpus("AIRL-ADD-1.xml"), InputOrigin::kUnicodeText);
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(std::get<ReferenceBody>(small->body).records.at(0).key, "AB");
}

}  // namespace
}  // namespace msgx::sis
