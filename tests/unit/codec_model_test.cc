// Compile check and small behaviours of the decoded-message model.
#include <gtest/gtest.h>

#include "codecs/sis_message.h"

namespace msgx::sis {
namespace {

TEST(CodecModel, ElementHelpers) {
  Element e;
  e.name = "GTDT";
  e.attributes.push_back({"GTNO", "1"});
  Element gate;
  gate.name = "GATE";
  gate.text = "G28";
  e.children.push_back(gate);
  EXPECT_EQ(e.AttrText("GTNO").value, "1");
  EXPECT_EQ(e.ChildText("GATE").presence, Presence::kValue);
  EXPECT_EQ(e.ChildText("PGOT").presence, Presence::kMissing);
  EXPECT_FALSE(e.IsBlank());

  DecodedMessage m;
  m.meta.type = "FLOP";
  FlopBody body;
  FlopRecord r;
  r.flid = "15";
  r.payload = TimePayload{};
  body.records.push_back(r);
  m.body = body;
  EXPECT_TRUE(std::holds_alternative<FlopBody>(m.body));
  EXPECT_TRUE(IsSnapshotStyp("RESP"));
  EXPECT_FALSE(IsSnapshotStyp("UPD"));
}

}  // namespace
}  // namespace msgx::sis
