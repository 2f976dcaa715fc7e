// Typed payloads of real corpus messages, checked field by field.
#include <gtest/gtest.h>

#include "codecs/sis_json.h"
#include "tests/unit/codec_test_util.h"

namespace msgx::sis {
namespace {

using testing::Flop;
using testing::ReadCorpus;
using testing::Shanghai;

DecodedMessage MustDecode(const std::string& text) {
  SisDecoder d(Shanghai());
  Result<DecodedMessage> m = d.Decode(text, InputOrigin::kUnicodeText);
  EXPECT_TRUE(m.ok()) << m.status().ToString();
  return m.ok() ? std::move(m).value() : DecodedMessage{};
}

template <typename P>
const P& PayloadOf(const DecodedMessage& m) {
  static const P empty{};
  const auto* body = std::get_if<FlopBody>(&m.body);
  if (body == nullptr || body->records.empty()) return empty;
  const auto* p = std::get_if<P>(&body->records[0].payload);
  EXPECT_NE(p, nullptr);
  return p ? *p : empty;
}

TEST(CodecPayload, MetaFields) {
  DecodedMessage m = MustDecode(ReadCorpus("FLOP-ACFT-1.xml"));
  EXPECT_EQ(m.meta.sndr, "AODB");
  EXPECT_EQ(m.meta.seqn, "1243");
  EXPECT_EQ(m.meta.seqn_number, 1243);
  EXPECT_EQ(FormatUtc(m.meta.dttm_utc_micros), "2002-10-10T01:03:11Z");  // 09:03:11 +08
  EXPECT_EQ(std::get<FlopBody>(m.body).records[0].flid, "15");
  EXPECT_EQ(PayloadOf<TextPayload>(m).value.value, "358");
}

TEST(CodecPayload, TimesClearAndReject) {
  DecodedMessage appt = MustDecode(ReadCorpus("FLOP-APPT-1.xml"));
  const TimePayload& t = PayloadOf<TimePayload>(appt);
  EXPECT_EQ(t.value.state, TimeState::kValue);
  EXPECT_EQ(FormatUtc(t.value.utc_micros), "2003-12-12T05:50:00Z");
  EXPECT_FALSE(t.reject_unparsable);
  EXPECT_EQ(PayloadOf<TimePayload>(MustDecode(ReadCorpus("FLOP-APPT-2.xml"))).value.state,
            TimeState::kEmpty);
  EXPECT_EQ(PayloadOf<TimePayload>(MustDecode(ReadCorpus("FLOP-TOBT-1.xml"))).value.state,
            TimeState::kMissing);
  // Reject STYPs keep an unparsable time for the handler; others are MALFORMED.
  const DecodedMessage cobt_msg = MustDecode(Flop("COBT", "<COBT>99XYZ</COBT>"));
  const TimePayload& cobt = PayloadOf<TimePayload>(cobt_msg);
  EXPECT_TRUE(cobt.reject_unparsable);
  EXPECT_EQ(cobt.value.state, TimeState::kUnparsable);
  EXPECT_EQ(cobt.value.raw, "99XYZ");
  SisDecoder d(Shanghai());
  auto bad = d.Decode(Flop("APPT", "<APPT>32JAN210535</APPT>"), InputOrigin::kUnicodeText);
  EXPECT_EQ(bad.status().error_class(), ErrorClass::kMalformed);
  EXPECT_EQ(bad.status().message(),
            "FLOP[1]/APPT: bad time \"32JAN210535\" (expected ddMMMyyHHmm)");
}

TEST(CodecPayload, DelayEntries) {
  const DecodedMessage p_msg = MustDecode(ReadCorpus("FLOP-DELY-1.xml"));
  const DelyPayload& p = PayloadOf<DelyPayload>(p_msg);
  ASSERT_EQ(p.entries.size(), 3u);
  EXPECT_EQ(p.entries[1].code.value, "XX");
  EXPECT_EQ(p.entries[1].dura.minutes, 121);
  EXPECT_EQ(p.entries[1].comment.value, "XXXXXXX");
  EXPECT_EQ(FormatUtc(p.entries[0].strt.utc_micros), "2003-12-15T08:05:00Z");
  EXPECT_FALSE(p.delete_all);
  EXPECT_TRUE(PayloadOf<DelyPayload>(MustDecode(ReadCorpus("FLOP-DELY-2.xml"))).delete_all);
}

TEST(CodecPayload, ListsAndKeys) {
  const DecodedMessage g_msg = MustDecode(ReadCorpus("FLOP-GTDT-1.xml"));
  const ListPayload& g = PayloadOf<ListPayload>(g_msg);
  ASSERT_EQ(g.entries.size(), 3u);
  EXPECT_EQ(g.key_name, "GTNO");
  EXPECT_EQ(g.entries[2].key.value, "3");
  EXPECT_EQ(g.entries[0].element.ChildText("GATE").value, "G28");
  EXPECT_EQ(g.entries[0].element.Child("PGOT")->time.state, TimeState::kValue);
  const DecodedMessage s_msg = MustDecode(ReadCorpus("FLOP-SRVT-2.xml"));
  const ListPayload& s = PayloadOf<ListPayload>(s_msg);
  ASSERT_EQ(s.entries.size(), 3u);
  EXPECT_EQ(s.entries[1].key.value, "ATL");
  EXPECT_EQ(s.entries[0].element.ChildText("SARR").value, "由于机器问题");
  EXPECT_TRUE(PayloadOf<ListPayload>(MustDecode(ReadCorpus("FLOP-SRVT-3.xml"))).all_blank);
  const DecodedMessage e_msg = MustDecode(ReadCorpus("FLOP-ERUT-1.xml"));
  const ListPayload& e = PayloadOf<ListPayload>(e_msg);
  EXPECT_EQ(e.entries[1].key.value, "2");
}

// A list entry's element as Convert() builds it: text given in pieces
// (around a CDATA section) joined and trimmed, and more element children
// than it gathers without allocating, all kept in order.
TEST(CodecPayload, ListEntryTextInPiecesAndManyChildren) {
  std::string text = ReadCorpus("FLOP-GTDT-1.xml");
  const std::size_t gate = text.find("<GATE>G28</GATE>");
  ASSERT_NE(gate, std::string::npos);
  std::string extra;
  for (int i = 0; i < 20; ++i) extra += "<XTRA>" + std::to_string(i) + "</XTRA>";
  text.replace(gate, 16, "<GATE> G<![CDATA[2]]>8 </GATE>" + extra);
  const DecodedMessage m = MustDecode(text);
  const Element& first = PayloadOf<ListPayload>(m).entries[0].element;
  EXPECT_EQ(first.ChildText("GATE").value, "G28");
  std::vector<std::string> xtra;
  for (const Element& c : first.children) {
    if (c.name == "XTRA") xtra.push_back(c.text);
  }
  ASSERT_EQ(xtra.size(), 20u);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(xtra[static_cast<std::size_t>(i)], std::to_string(i));
  EXPECT_GT(first.children.size(), 20u);
  EXPECT_EQ(first.children.front().name, "GATE");  // the order of the text
}

TEST(CodecPayload, SmallKinds) {
  const DecodedMessage h_msg = MustDecode(ReadCorpus("FLOP-HNAG-1.xml"));
  const HnagPayload& h = PayloadOf<HnagPayload>(h_msg);
  EXPECT_EQ(h.phag.value, 22313);
  EXPECT_EQ(PayloadOf<HnagPayload>(MustDecode(ReadCorpus("FLOP-HNAG-2.xml"))).fhag.presence,
            Presence::kEmpty);
  const DecodedMessage f_msg = MustDecode(ReadCorpus("FLOP-FDIV-3.xml"));
  const FdivPayload& f = PayloadOf<FdivPayload>(f_msg);
  EXPECT_EQ(f.ddir.value, "TOO");
  EXPECT_EQ(f.reason.value, "INCLEMENT WEATHER");
  EXPECT_EQ(PayloadOf<FlabPayload>(MustDecode(ReadCorpus("FLOP-FLAB-2.xml"))).ares.presence,
            Presence::kEmpty);
  const DecodedMessage port_msg = MustDecode(ReadCorpus("FLOP-PORT-1.xml"));
  const PortPayload& port = PayloadOf<PortPayload>(port_msg);
  EXPECT_EQ(port.poid.value, "O");
  EXPECT_EQ(port.potm.state, TimeState::kValue);
  EXPECT_TRUE(PayloadOf<FdelPayload>(MustDecode(ReadCorpus("FLOP-FDEL-1.xml"))).empty);
  EXPECT_FALSE(PayloadOf<FdelPayload>(MustDecode(Flop("FDEL", "<FDEL>x</FDEL>"))).empty);
  EXPECT_EQ(PayloadOf<CharPayload>(MustDecode(ReadCorpus("FLOP-FLIN-1.xml"))).value.value, "I");
  EXPECT_EQ(PayloadOf<IntPayload>(MustDecode(ReadCorpus("FLOP-MAXP-1.xml"))).value.value, 130);
  EXPECT_EQ(PayloadOf<TaopPayload>(MustDecode(ReadCorpus("FLOP-TAOP-1.xml"))).taid.value,
            "6213345");
  EXPECT_EQ(PayloadOf<ExssPayload>(MustDecode(ReadCorpus("FLOP-EXSS-1.xml"))).exsr.value,
            "delay for one hour");
  EXPECT_EQ(PayloadOf<VippPayload>(MustDecode(ReadCorpus("FLOP-VIPP-2.xml"))).vipp.presence,
            Presence::kEmpty);
}

TEST(CodecPayload, UnknownElementsAreKept) {
  DecodedMessage m = MustDecode(Flop("STND", "<STND>S1</STND><XTRA A=\"1\">y</XTRA>"));
  const FlopRecord& r = std::get<FlopBody>(m.body).records[0];
  ASSERT_EQ(r.extras.size(), 1u);
  EXPECT_EQ(r.extras[0].name, "XTRA");
  EXPECT_EQ(r.extras[0].AttrText("A").value, "1");
}

TEST(CodecPayload, Schedule) {
  DecodedMessage m = MustDecode(ReadCorpus("SCHD-DNLD-1.xml"));
  const ScheduleBody& b = std::get<ScheduleBody>(m.body);
  EXPECT_FALSE(b.seasonal);
  EXPECT_EQ(b.recs.value, 2);
  ASSERT_EQ(b.records.size(), 2u);
  EXPECT_EQ(b.records[0].flid.value, "15");
  EXPECT_EQ(FormatUtc(b.records[0].sodt.utc_micros), "2021-01-22T21:35:00Z");
  EXPECT_TRUE(b.records[0].missing_required.empty());
  const Element* rout = b.records[0].Field("ROUT");
  ASSERT_NE(rout, nullptr);
  EXPECT_EQ(rout->AttrText("RTNO").value, "1");
  EXPECT_EQ(rout->Child("SCAT")->time.state, TimeState::kValue);

  DecodedMessage s = MustDecode(ReadCorpus("SCHS-DNLD-1.xml"));
  const ScheduleBody& sb = std::get<ScheduleBody>(s.body);
  EXPECT_TRUE(sb.seasonal);
  EXPECT_EQ(sb.snam.value, "Winter");
  EXPECT_EQ(FormatUtc(sb.sdat.utc_micros), "2020-09-09T16:00:00Z");
  EXPECT_EQ(sb.records[0].Field("SCHT")->time.minutes, 10 * 60 + 23);
  EXPECT_EQ(sb.records[0].Field("ROUT")->Child("SCAT")->time.minutes, 11 * 60 + 25);

  SisDecoder d(Shanghai());
  std::string bad = ReadCorpus("SCHD-DNLD-1.xml");
  bad.replace(bad.find("23JAN210325"), 11, "32JAN210535");
  EXPECT_EQ(d.Decode(bad, InputOrigin::kUnicodeText).status().message(),
            "FLTR[2]/SODT: bad time \"32JAN210535\" (expected ddMMMyyHHmm)");
  std::string noflid = ReadCorpus("SCHD-DNLD-1.xml");
  noflid.replace(noflid.find("<FLID>16</FLID>"), 15, "");
  EXPECT_EQ(d.Decode(noflid, InputOrigin::kUnicodeText).status().message(),
            "FLTR[2]/FLID: missing");
  std::string noacft = ReadCorpus("SCHD-DNLD-1.xml");
  noacft.replace(noacft.find("<ACFT>733</ACFT>"), 16, "");
  auto partial = d.Decode(noacft, InputOrigin::kUnicodeText);
  ASSERT_TRUE(partial.ok());
  EXPECT_EQ(std::get<ScheduleBody>(partial->body).records[0].missing_required,
            std::vector<std::string>{"ACFT"});
}

TEST(CodecPayload, Reference) {
  DecodedMessage m = MustDecode(ReadCorpus("ABDG-DEL-1.xml"));
  const ReferenceBody& b = std::get<ReferenceBody>(m.body);
  ASSERT_EQ(b.records.size(), 1u);
  EXPECT_EQ(b.records[0].key_name, "ABCD");
  EXPECT_EQ(b.records[0].key, "213");
  EXPECT_EQ(b.records[0].Field("CDSC")->text, "登机桥 213");
  EXPECT_EQ(b.records[0].Field("ATHE")->text, "N");
}

}  // namespace
}  // namespace msgx::sis
