// SharedEntries (state/flight.h): a record's list shared between copies of
// the record until one of them changes it.
#include <gtest/gtest.h>

#include "state/compact_flight.h"
#include "state/flight.h"
#include "stream/fold/handlers/decision.h"

namespace msgx {
namespace {

Fields Stand(const std::string& code) { return {{"PSST", Value::Text(code)}}; }

TEST(SharedEntriesTest, ACopyChangedThroughMutableLeavesTheOriginalAsItWas) {
  Record a;
  a.lists["PSDT"] = Entries{Stand("501"), Stand("502")};
  Record b = a;  // shares the list
  EXPECT_EQ(&a.lists.at("PSDT").get(), &b.lists.at("PSDT").get());
  b.lists.at("PSDT").Mutable()[0] = Stand("509");
  EXPECT_EQ(a.lists.at("PSDT")[0], Stand("501")) << "the original kept its entries";
  EXPECT_EQ(b.lists.at("PSDT")[0], Stand("509"));
  EXPECT_NE(a, b);
  // The only holder changes its own entries without a copy.
  const Entries* own = &b.lists.at("PSDT").get();
  b.lists.at("PSDT").Mutable().push_back(Stand("510"));
  EXPECT_EQ(&b.lists.at("PSDT").get(), own);
  EXPECT_EQ(b.lists.at("PSDT").size(), 3u);
}

TEST(SharedEntriesTest, ListsCompareByTheirEntries) {
  Record a;
  Record b;
  a.lists["GTDT"] = Entries{Stand("1")};
  b.lists["GTDT"] = Entries{Stand("1")};  // equal, not shared
  EXPECT_EQ(a, b);
  b.lists["GTDT"] = Entries{Stand("2")};
  EXPECT_NE(a, b);
  // No entries and an empty list are the same value.
  EXPECT_EQ(SharedEntries(), SharedEntries(Entries{}));
  EXPECT_TRUE(SharedEntries().empty());
  SharedEntries grown;
  grown.Mutable().push_back(Stand("3"));
  EXPECT_EQ(grown.size(), 1u);
}

// A kept rendering is the entries' own: it counts the renders, so a test
// sees when the kept bytes were appended instead.
struct CountingRender {
  int* calls;
  void operator()(const Entries& e, std::string* out) const {
    ++*calls;
    for (const Fields& f : e) out->append(f.at("PSST").text).push_back(';');
  }
};

TEST(SharedEntriesTest, ARenderingIsKeptForEveryHolderUntilTheEntriesChange) {
  int calls = 0;
  Record a;
  a.lists["PSDT"] = Entries{Stand("501"), Stand("502")};
  const Record b = a;  // shares the list, and so its renderings
  std::string out;
  a.lists.at("PSDT").AppendRendering(SharedEntries::Rendering::kJson, 7, &out,
                                     CountingRender{&calls});
  b.lists.at("PSDT").AppendRendering(SharedEntries::Rendering::kJson, 7, &out,
                                     CountingRender{&calls});
  EXPECT_EQ(out, "501;502;501;502;");
  EXPECT_EQ(calls, 1) << "the second holder appended the kept bytes";
  // Another slot, or another key in the same slot, is rendered again; a
  // key that is not the kept one is not kept.
  out.clear();
  a.lists.at("PSDT").AppendRendering(SharedEntries::Rendering::kCompact, 7, &out,
                                     CountingRender{&calls});
  a.lists.at("PSDT").AppendRendering(SharedEntries::Rendering::kJson, 8, &out,
                                     CountingRender{&calls});
  a.lists.at("PSDT").AppendRendering(SharedEntries::Rendering::kJson, 8, &out,
                                     CountingRender{&calls});
  EXPECT_EQ(calls, 4);
  EXPECT_EQ(out, "501;502;501;502;501;502;");
}

TEST(SharedEntriesTest, AChangeForgetsTheKeptRenderings) {
  int calls = 0;
  SharedEntries list(Entries{Stand("501")});
  std::string out;
  list.AppendRendering(SharedEntries::Rendering::kJson, 1, &out, CountingRender{&calls});
  // The only holder changes its entries in place: what was kept is gone.
  list.Mutable()[0] = Stand("509");
  out.clear();
  list.AppendRendering(SharedEntries::Rendering::kJson, 1, &out, CountingRender{&calls});
  EXPECT_EQ(out, "509;");
  EXPECT_EQ(calls, 2);
  // A shared list changed through one holder: the other keeps its own.
  const SharedEntries other = list;
  SharedEntries changed = list;
  changed.Mutable().push_back(Stand("510"));
  out.clear();
  other.AppendRendering(SharedEntries::Rendering::kJson, 1, &out, CountingRender{&calls});
  changed.AppendRendering(SharedEntries::Rendering::kJson, 1, &out, CountingRender{&calls});
  EXPECT_EQ(out, "509;509;510;");
  EXPECT_EQ(calls, 3) << "the unchanged list appended its kept rendering";
}

// The flight's JSON and its compact form, made with lists kept from an
// earlier rendering, are the bytes a fresh copy of the same flight renders.
TEST(SharedEntriesTest, KeptRenderingsGiveTheSameFlightJsonAndCompactForm) {
  const FixedZone zone(8 * 3600);
  Flight f;
  f.flid = "42";
  f.data.fields["STND"] = Value::Text("501");
  f.data.lists["PSDT"] =
      Entries{{{"PSST", Value::Text("501")}, {"PSBT", Value::Time(1'611'334'800'000'000LL)}}};
  const std::string json = FlightJson(f, zone);
  const std::string compact = EncodeCompactFlight(f);
  Flight next = f;  // shares PSDT and its kept renderings
  next.data.fields["STND"] = Value::Text("502");
  Flight fresh;
  fresh.flid = "42";
  fresh.data.fields["STND"] = Value::Text("502");
  fresh.data.lists["PSDT"] = Entries(f.data.lists.at("PSDT").get());  // nothing kept
  EXPECT_EQ(FlightJson(next, zone), FlightJson(fresh, zone));
  EXPECT_EQ(EncodeCompactFlight(next), EncodeCompactFlight(fresh));
  EXPECT_EQ(FlightJson(f, zone), json);
  EXPECT_EQ(EncodeCompactFlight(f), compact);
  // Another zone object with another offset renders the times its way.
  const FixedZone utc(0);
  EXPECT_NE(FlightJson(f, utc), json);
  EXPECT_NE(json.find("2021-01-23T01:00:00+08:00"), std::string::npos) << json;
  EXPECT_NE(FlightJson(f, utc).find("2021-01-22T17:00:00+00:00"), std::string::npos)
      << FlightJson(f, utc);
}

// A decision's list change holds the lists of the two versions themselves,
// not copies: its JSON appends their kept renderings.
TEST(SharedEntriesTest, AListChangeSharesTheVersionsLists) {
  Record before;
  before.lists["GTDT"] = Entries{Stand("1")};
  Record after = before;
  after.lists.at("GTDT").Mutable().push_back(Stand("2"));
  const std::vector<FieldChange> changes = DiffRecords(before, after);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_TRUE(changes[0].is_list);
  EXPECT_EQ(&changes[0].list_before.get(), &before.lists.at("GTDT").get());
  EXPECT_EQ(&changes[0].list_after.get(), &after.lists.at("GTDT").get());
  // A list that appears or goes: the other side is empty.
  Record none;
  const std::vector<FieldChange> gone = DiffRecords(before, none);
  ASSERT_EQ(gone.size(), 1u);
  EXPECT_TRUE(gone[0].list_after.empty());
  EXPECT_EQ(&gone[0].list_before.get(), &before.lists.at("GTDT").get());
}

}  // namespace
}  // namespace msgx
