// SharedEntries (state/flight.h): a record's list shared between copies of
// the record until one of them changes it.
#include <gtest/gtest.h>

#include "state/flight.h"

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

}  // namespace
}  // namespace msgx
