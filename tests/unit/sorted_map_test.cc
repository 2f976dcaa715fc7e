// SortedMap (state/sorted_map.h): std::map's behaviour for the operations the
// fold uses, held as one sorted vector.
#include "state/sorted_map.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace msgx {
namespace {

std::vector<std::string> Keys(const SortedMap<int>& m) {
  std::vector<std::string> out;
  for (const auto& [k, v] : m) out.push_back(k);
  return out;
}

TEST(SortedMapTest, IteratesInByteWiseKeyOrderWhateverTheInsertOrder) {
  SortedMap<int> m;
  m["b"] = 2;
  m.emplace(std::string("a"), 1);
  m.insert({"B", 3});  // 'B' < 'a' byte-wise
  m.insert_or_assign("c", 4);
  m["a.x"] = 5;
  EXPECT_EQ(Keys(m), (std::vector<std::string>{"B", "a", "a.x", "b", "c"}));
  EXPECT_EQ(m.size(), 5u);
}

TEST(SortedMapTest, InsertsOnlyWhatIsAbsentAndAssignsOnlyWhenAsked) {
  SortedMap<int> m{{"k", 1}, {"k", 2}};  // as std::map: the first is kept
  EXPECT_EQ(m.at("k"), 1);
  EXPECT_FALSE(m.emplace(std::string("k"), 3).second);
  EXPECT_FALSE(m.insert({"k", 4}).second);
  EXPECT_EQ(m.at("k"), 1);
  EXPECT_FALSE(m.insert_or_assign("k", 5).second);
  EXPECT_EQ(m.at("k"), 5);
  EXPECT_EQ(m["new"], 0);  // value-initialised
  EXPECT_EQ(m.size(), 2u);
}

TEST(SortedMapTest, FindsCountsAndErases) {
  SortedMap<int> m{{"a", 1}, {"c", 3}, {"e", 5}};
  EXPECT_EQ(m.find("c")->second, 3);
  EXPECT_EQ(m.find("b"), m.end());
  EXPECT_EQ(m.lower_bound("b")->first, "c");
  EXPECT_EQ(m.count("e"), 1u);
  EXPECT_EQ(m.count("z"), 0u);
  EXPECT_THROW((void)m.at("z"), std::out_of_range);
  EXPECT_EQ(m.erase("c"), 1u);
  EXPECT_EQ(m.erase("c"), 0u);
  EXPECT_EQ(m.erase(m.find("a"))->first, "e");
  EXPECT_EQ(Keys(m), (std::vector<std::string>{"e"}));
}

TEST(SortedMapTest, EqualWhenTheSameEntries) {
  SortedMap<int> a{{"x", 1}, {"y", 2}};
  SortedMap<int> b;
  b["y"] = 2;
  b["x"] = 1;
  EXPECT_EQ(a, b);
  b["y"] = 3;
  EXPECT_FALSE(a == b);
}

}  // namespace
}  // namespace msgx
