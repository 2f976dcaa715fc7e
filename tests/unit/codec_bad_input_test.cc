// Hand-written bad inputs: each is classified, none crashes.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "codecs/sis_xml.h"
#include "tests/unit/codec_test_util.h"

namespace msgx::sis {
namespace {

using testing::Flop;
using testing::ReadCorpus;
using testing::Shanghai;

ErrorClass ClassOf(const std::string& text, InputOrigin origin = InputOrigin::kUnicodeText) {
  SisDecoder d(Shanghai());
  return d.Decode(text, origin).status().error_class();
}

std::string MessageOf(const std::string& text, InputOrigin origin = InputOrigin::kUnicodeText) {
  SisDecoder d(Shanghai());
  return d.Decode(text, origin).status().message();
}

TEST(CodecBadInput, Empty) {
  EXPECT_EQ(ClassOf(""), ErrorClass::kMalformed);
  EXPECT_EQ(ClassOf("  \n"), ErrorClass::kMalformed);
  EXPECT_EQ(ClassOf("\xEF\xBB\xBF"), ErrorClass::kMalformed);
}

TEST(CodecBadInput, TruncatedEverySeventhByte) {
  for (const char* name : {"SCHD-DNLD-1.xml", "FLOP-GTDT-1.xml", "AIRL-ADD-1.xml"}) {
    const std::string full = ReadCorpus(name);
    ASSERT_FALSE(full.empty());
    // Every cut before the closing </MSG> is complete is not well-formed.
    const std::size_t complete = full.rfind("</MSG>") + 6;
    for (std::size_t n = 0; n < complete; n += 7) {
      EXPECT_EQ(ClassOf(full.substr(0, n)), ErrorClass::kMalformed) << name << " cut at " << n;
      EXPECT_EQ(ClassOf(full.substr(0, n), InputOrigin::kRawBytes), ErrorClass::kMalformed);
    }
  }
}

TEST(CodecBadInput, TwentyMegabytes) {
  std::string big = "<MSG><META/>" + std::string(20u << 20, 'x') + "</MSG>";
  EXPECT_EQ(ClassOf(big), ErrorClass::kCodecError);
  // Under a smaller configured limit, a normal message is refused too.
  SisDecoder small(Shanghai(), DecoderOptions{100, 32});
  auto r = small.Decode(ReadCorpus("FLOP-ACFT-1.xml"), InputOrigin::kUnicodeText);
  EXPECT_EQ(r.status().error_class(), ErrorClass::kCodecError);
  EXPECT_NE(r.status().message().find("codec.max-bytes"), std::string::npos);
}

TEST(CodecBadInput, TenThousandLevels) {
  std::string deep = "<MSG><META><SNDR>A</SNDR></META><FLOP>";
  for (int i = 0; i < 10000; ++i) deep += "<A>";
  for (int i = 0; i < 10000; ++i) deep += "</A>";
  deep += "</FLOP></MSG>";
  EXPECT_EQ(ClassOf(deep), ErrorClass::kMalformed);
  EXPECT_NE(MessageOf(deep).find("nesting deeper"), std::string::npos);
  // Unclosed, too.
  std::string open(size_t{10000} * 3, ' ');
  for (int i = 0; i < 10000; ++i) open.replace(static_cast<std::size_t>(i) * 3, 3, "<A>");
  EXPECT_EQ(ClassOf(open), ErrorClass::kMalformed);
}

// The depth cap at its edge: `levels` nodes deep, the text in the innermost
// element the deepest. The start tags are one fewer than the depth, so the
// check cannot be skipped at 33 and must be at 32 (the walk would agree).
constexpr std::size_t kAll = std::numeric_limits<std::size_t>::max();

std::string NestedLevels(int levels) {
  std::string s = "<MSG>";
  for (int i = 2; i < levels; ++i) s += "<A>";
  s += "x";
  for (int i = 2; i < levels; ++i) s += "</A>";
  return s + "</MSG>";
}

TEST(CodecBadInput, DepthCapAtItsEdge) {
  EXPECT_EQ(xml::StartTagBound(NestedLevels(33), kAll), 32u);
  EXPECT_NE(MessageOf(NestedLevels(33)).find("nesting deeper than 32"), std::string::npos);
  // At the cap: refused for what it lacks, not for its depth.
  const std::string at_cap = MessageOf(NestedLevels(32));
  EXPECT_EQ(at_cap.find("nesting deeper"), std::string::npos) << at_cap;
  EXPECT_NE(at_cap, "");
  // Comments, CDATA and a prolog count as start tags; end tags do not.
  EXPECT_EQ(xml::StartTagBound("<?xml version=\"1.0\"?><A><!-- c --><![CDATA[<]]></A>", kAll), 5u);
  EXPECT_EQ(xml::StartTagBound("</A></B><", kAll), 1u);
  // Against a byte-by-byte count, on every length up to 40 and every
  // position of '<' and '/' the eight-byte steps could split.
  std::mt19937 rng(7);
  for (int round = 0; round < 2000; ++round) {
    std::string s(static_cast<std::size_t>(round % 41), 'a');
    // 0xBC and 0xAF are '<' and '/' with the top bit set (UTF-8 bytes).
    for (char& c : s) c = "<</a>\xBC\xAF"[rng() % 7];
    std::size_t want = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
      want += s[i] == '<' && (i + 1 == s.size() || s[i + 1] != '/') ? 1 : 0;
    }
    ASSERT_EQ(xml::StartTagBound(s, kAll), want) << s;
    ASSERT_EQ(xml::StartTagBound(s, 3), std::min<std::size_t>(want, 3)) << s;
  }
  // A corpus message with more start tags than the cap is walked, and passes.
  const std::string snapshot = ReadCorpus("SCHD-DNLD-1.xml");
  EXPECT_GT(xml::StartTagBound(snapshot, kAll), 32u);
  EXPECT_EQ(xml::StartTagBound(snapshot, 32), 32u);  // it stops there
  EXPECT_TRUE(SisDecoder(Shanghai()).Decode(snapshot, InputOrigin::kUnicodeText).ok());
}

TEST(CodecBadInput, InvalidUtf8) {
  std::string text = ReadCorpus("FLOP-REMC-1.xml");
  text.replace(text.find("Bag"), 3, "B\xC3\x28");
  EXPECT_EQ(ClassOf(text), ErrorClass::kMalformed);
  EXPECT_NE(MessageOf(text).find("invalid UTF-8"), std::string::npos);
  EXPECT_EQ(ClassOf(text, InputOrigin::kRawBytes), ErrorClass::kMalformed);
  // Overlong and surrogate encodings.
  EXPECT_EQ(ClassOf(Flop("REMC", "<REMC>\xC0\xAF</REMC>")), ErrorClass::kMalformed);
  EXPECT_EQ(ClassOf(Flop("REMC", "<REMC>\xED\xA0\x80</REMC>")), ErrorClass::kMalformed);
}

TEST(CodecBadInput, GbkDeclared) {
  // "由于" in GBK is D3 C9 D3 DA.
  const std::string gbk =
      "<?xml version=\"1.0\" encoding=\"GBK\"?>" + Flop("REMC", "<REMC>\xD3\xC9\xD3\xDA</REMC>");
  SisDecoder d(Shanghai());
  auto ok = d.Decode(gbk, InputOrigin::kRawBytes);
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_EQ(std::get<TextPayload>(std::get<FlopBody>(ok->body).records[0].payload).value.value,
            "由于");
  // The same bytes from the mailbox's text column are taken as Unicode, and
  // these are not UTF-8.
  EXPECT_EQ(ClassOf(gbk, InputOrigin::kUnicodeText), ErrorClass::kMalformed);
  // Invalid GBK (0xFF is never a GBK lead byte).
  const std::string bad =
      "<?xml version=\"1.0\" encoding=\"GBK\"?>" + Flop("REMC", "<REMC>\xD3\xFF\xFF</REMC>");
  EXPECT_EQ(ClassOf(bad, InputOrigin::kRawBytes), ErrorClass::kMalformed);
  EXPECT_NE(MessageOf(bad, InputOrigin::kRawBytes).find("invalid GBK bytes at offset"),
            std::string::npos);
  // An encoding the codec cannot transcode.
  const std::string alien = "<?xml version=\"1.0\" encoding=\"X-KLINGON\"?>" + Flop("REMC", "");
  EXPECT_EQ(ClassOf(alien, InputOrigin::kRawBytes), ErrorClass::kCodecError);
  // UTF-16LE with a BOM.
  std::string u16 = "\xFF\xFE";
  for (char c : Flop("STND", "<STND>S1</STND>")) {
    u16 += c;
    u16 += '\0';
  }
  EXPECT_TRUE(d.Decode(u16, InputOrigin::kRawBytes).ok());
}

TEST(CodecBadInput, CharacterReferencesAndNul) {
  EXPECT_EQ(MessageOf(Flop("REMC", "<REMC>x&#0;y</REMC>")),
            "invalid character reference &#0; at offset 152");
  EXPECT_EQ(ClassOf(Flop("REMC", "<REMC>x&#xD800;y</REMC>")), ErrorClass::kMalformed);
  EXPECT_EQ(ClassOf(Flop("REMC", "<REMC>x&#x110000;y</REMC>")), ErrorClass::kMalformed);
  EXPECT_EQ(ClassOf(Flop("REMC", std::string("<REMC>x\0y</REMC>", 16))), ErrorClass::kMalformed);
  SisDecoder d(Shanghai());
  auto ok = d.Decode(Flop("REMC", "<REMC>&#x4E2D;&#22269;&amp;</REMC>"), InputOrigin::kUnicodeText);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(std::get<TextPayload>(std::get<FlopBody>(ok->body).records[0].payload).value.value,
            "中国&");
}

TEST(CodecBadInput, BomPrologXsiAndSpacedAttributes) {
  const std::string text = "\xEF\xBB\xBF" + ReadCorpus("FLOP-GTDT-1.xml");
  EXPECT_EQ(ClassOf(text), ErrorClass::kOk);
  EXPECT_EQ(ClassOf(text, InputOrigin::kRawBytes), ErrorClass::kOk);
  EXPECT_EQ(ClassOf(Flop("GTDT", "<GTDT GTNO = '1' ><GATE>G1</GATE></GTDT>")), ErrorClass::kOk);
}

TEST(CodecBadInput, BinaryGarbage) {
  std::mt19937 rng(42);
  for (int i = 0; i < 200; ++i) {
    std::string junk(static_cast<std::size_t>(rng() % 2000), '\0');
    for (char& c : junk) c = static_cast<char>(rng());
    const ErrorClass c1 = ClassOf(junk);
    const ErrorClass c2 = ClassOf(junk, InputOrigin::kRawBytes);
    EXPECT_NE(c1, ErrorClass::kOk);
    EXPECT_NE(c2, ErrorClass::kOk);
  }
}

TEST(CodecBadInput, MissingParts) {
  EXPECT_EQ(MessageOf("<MSG><FLOP><FLID>1</FLID></FLOP></MSG>"), "no META");
  EXPECT_EQ(MessageOf("<MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DTTM>20031215090311</DTTM>"
                      "<STYP>ACFT</STYP></META></MSG>"),
            "META/TYPE: missing");
  EXPECT_EQ(MessageOf("<MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DTTM>20031215090311</DTTM>"
                      "<TYPE>FLOP</TYPE><STYP> </STYP></META></MSG>"),
            "META/STYP: empty");
  std::string nostyp = ReadCorpus("FLOP-ACFT-1.xml");
  nostyp.replace(nostyp.find("<STYP>ACFT</STYP>"), 17, "");
  EXPECT_EQ(MessageOf(nostyp), "META/STYP: missing");
  std::string emptyflid = ReadCorpus("FLOP-ACFT-1.xml");
  emptyflid.replace(emptyflid.find("<FLID>15</FLID>"), 15, "<FLID> </FLID>");
  EXPECT_EQ(MessageOf(emptyflid), "FLOP[1]/FLID: empty");
  std::string noflid = ReadCorpus("FLOP-ACFT-1.xml");
  noflid.replace(noflid.find("<FLID>15</FLID>"), 15, "");
  EXPECT_EQ(MessageOf(noflid), "FLOP[1]/FLID: missing");
  EXPECT_EQ(ClassOf("<NOTMSG/>"), ErrorClass::kMalformed);
  std::string nobody = ReadCorpus("FLOP-ACFT-1.xml");
  nobody.erase(nobody.find("<FLOP>"), nobody.find("</FLOP>") + 7 - nobody.find("<FLOP>"));
  EXPECT_EQ(MessageOf(nobody), "FLOP: no FLOP record");
  std::string noref = ReadCorpus("AIRL-ADD-1.xml");
  noref.replace(noref.find("<ITOP>"), 6, "<XTOP>");
  noref.replace(noref.find("</ITOP>"), 7, "</XTOP>");
  EXPECT_EQ(MessageOf(noref), "AIRL[1]/ITOP: missing");
}

TEST(CodecBadInput, WrongShapes) {
  std::string dttm = ReadCorpus("FLOP-ACFT-1.xml");
  dttm.replace(dttm.find("20021010090311"), 14, "20021310090311");
  EXPECT_EQ(MessageOf(dttm), "META/DTTM: bad time \"20021310090311\" (expected yyyyMMddHHmmss)");
  EXPECT_EQ(MessageOf(Flop("MAXP", "<MAXP>12a</MAXP>")), "FLOP[1]/MAXP: not an integer \"12a\"");
  EXPECT_EQ(ClassOf(Flop("HNAG", "<FHAG>1.5</FHAG>")), ErrorClass::kMalformed);
  EXPECT_EQ(ClassOf(Flop("FLIN", "<FLIN>ID</FLIN>")), ErrorClass::kMalformed);
  EXPECT_EQ(ClassOf(Flop("FLIN", "<FLIN>国</FLIN>")), ErrorClass::kOk);
  EXPECT_EQ(MessageOf(Flop("DELY", "<DELY CODE=\"A\" DURA=\"2h\">x</DELY>")),
            "FLOP[1]/DELY@DURA: bad duration \"2h\" (expected HHMM)");
  EXPECT_EQ(MessageOf(Flop("GTDT",
                           "<GTDT GTNO=\"1\"><PGOT>15DEC031805</PGOT></GTDT>"
                           "<GTDT GTNO=\"2\"><PGOT>15DEC031360</PGOT></GTDT>")),
            "FLOP[1]/GTDT[2]/PGOT: bad time \"15DEC031360\" (expected ddMMMyyHHmm)");
  EXPECT_EQ(ClassOf(Flop("ACFT", "<ACFT>1</ACFT><ACFT>2</ACFT>")), ErrorClass::kMalformed);
  std::string recs = ReadCorpus("SCHD-DNLD-1.xml");
  recs.replace(recs.find("<RECS>2</RECS>"), 14, "<RECS>two</RECS>");
  EXPECT_EQ(ClassOf(recs), ErrorClass::kMalformed);
}

TEST(CodecBadInput, UnsupportedAndDoctype) {
  std::string ldm = ReadCorpus("FLOP-ACFT-1.xml");
  ldm.replace(ldm.find("<STYP>ACFT"), 10, "<STYP>XXXX");
  EXPECT_EQ(ClassOf(ldm), ErrorClass::kUnsupported);
  EXPECT_EQ(MessageOf(ldm), "no handler for FLOP-XXXX");
  const std::string lol =
      "<?xml version=\"1.0\"?><!DOCTYPE MSG [<!ENTITY a \"aaaaaaaaaa\">"
      "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\">]>" +
      Flop("REMC", "<REMC>&b;</REMC>");
  EXPECT_EQ(MessageOf(lol), "DOCTYPE is not allowed");
  // An undeclared entity is not expanded (and not well-formed for pugixml? either
  // way: classified, no blow-up).
  EXPECT_NE(ClassOf(Flop("REMC", "<REMC>&b;</REMC>")), ErrorClass::kCodecError);
}

TEST(CodecBadInput, RecsMismatchOnlyLoggedForUpserts) {
  std::string upd = ReadCorpus("ABDG-UPD-1.xml");
  ASSERT_NE(upd.find("<RECS>1</RECS>"), std::string::npos);
  upd.replace(upd.find("<RECS>1</RECS>"), 14, "<RECS>5</RECS>");
  SisDecoder d(Shanghai());
  auto r = d.Decode(upd, InputOrigin::kUnicodeText);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE(std::get<ReferenceBody>(r->body).recs_mismatch);
}

}  // namespace
}  // namespace msgx::sis
