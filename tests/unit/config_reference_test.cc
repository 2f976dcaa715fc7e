// The configuration reference and the code cannot drift:
// docs/configuration.md#keys-and-defaults has one row per key of
// ConfigReference() (base/config.h), with the same type, default and floor,
// and an effect; etc/msgx.yaml, the example file `cmake --install` ships,
// names every key and loads.
#include "base/config_reference.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "base/config.h"

namespace msgx {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Trim(const std::string& s) {
  size_t b = s.find_first_not_of(' ');
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(' ') - b + 1);
}

// "`x`" -> "x"; "empty" and "—" -> "".
std::string Cell(const std::string& raw) {
  std::string t = Trim(raw);
  if (t == "empty" || t == "—") return "";
  if (t.size() >= 2 && t.front() == '`' && t.back() == '`') return t.substr(1, t.size() - 2);
  return t;
}

struct Row {
  std::string type, default_value, floor, effect;
};

// The rows of the table under "## Keys and defaults", by key.
std::map<std::string, Row> DocRows(const std::string& md, std::vector<std::string>* dupes) {
  std::map<std::string, Row> rows;
  const size_t start = md.find("\n## Keys and defaults\n");
  if (start == std::string::npos) return rows;
  const size_t end = md.find("\n## ", start + 1);
  std::stringstream in(
      md.substr(start, end == std::string::npos ? std::string::npos : end - start));
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("| `", 0) != 0) continue;
    std::vector<std::string> cells;
    std::string cell;
    for (size_t i = 1; i < line.size(); ++i) {
      if (line[i] == '|' && line[i - 1] != '\\') {
        cells.push_back(cell);
        cell.clear();
      } else {
        cell += line[i];
      }
    }
    if (cells.size() != 5) {
      ADD_FAILURE() << "a row without 5 cells: " << line;
      continue;
    }
    const std::string key = Cell(cells[0]);
    if (rows.count(key) != 0) dupes->push_back(key);
    rows[key] = {Cell(cells[1]), Cell(cells[2]), Cell(cells[3]), Trim(cells[4])};
  }
  return rows;
}

TEST(ConfigReferenceTest, TheDocumentedTableIsTheKeyTable) {
  std::vector<std::string> dupes;
  const auto rows = DocRows(ReadFile(MSGX_SOURCE_DIR "/docs/configuration.md"), &dupes);
  ASSERT_FALSE(rows.empty()) << "no table under ## Keys and defaults";
  EXPECT_TRUE(dupes.empty()) << "documented twice: " << dupes.front();
  std::set<std::string> code_keys;
  for (const KeyReference& k : ConfigReference()) {
    code_keys.insert(k.key);
    auto it = rows.find(k.key);
    if (it == rows.end()) {
      ADD_FAILURE() << k.key << " is not in docs/configuration.md (msgx config --reference)";
      continue;
    }
    EXPECT_EQ(it->second.type, k.type) << k.key << ": type";
    EXPECT_EQ(it->second.default_value, k.default_value) << k.key << ": default";
    EXPECT_EQ(it->second.floor, k.floor) << k.key << ": floor";
    EXPECT_FALSE(it->second.effect.empty()) << k.key << ": no effect written";
  }
  for (const auto& [key, row] : rows) {
    EXPECT_EQ(code_keys.count(key), 1u) << key << " is documented but not a key";
  }
}

// Every key appears in the example as a YAML key (set, or commented out),
// and the file loads: what it sets is either a default or one of the
// settings an installation must choose.
TEST(ConfigReferenceTest, TheExampleFileNamesEveryKeyAndLoads) {
  const std::string path = MSGX_SOURCE_DIR "/etc/msgx.yaml";
  const std::string text = ReadFile(path);
  ASSERT_FALSE(text.empty()) << path;
  for (const KeyReference& k : ConfigReference()) {
    std::string leaf = k.key.substr(k.key.rfind('.') + 1);
    if (leaf == "*") leaf = k.key.substr(0, k.key.size() - 2).substr(6);  // "producer"
    const std::regex line("(^|\n)[ #]*" +
                          std::regex_replace(leaf, std::regex(R"([.\-])"), R"(\$&)") + ":");
    EXPECT_TRUE(std::regex_search(text, line)) << k.key << " is not in " << path;
  }
  Result<Config> loaded = LoadConfig(path, {});
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const std::set<std::string> chosen{"mailbox.url", "postgres.url", "kafka.bootstrap-servers",
                                     "state.dir", "dev.dir"};
  std::stringstream got(DescribeConfig(*loaded));
  std::stringstream want(DescribeConfig(Config{}));
  std::string g, w;
  while (std::getline(want, w)) {
    ASSERT_TRUE(std::getline(got, g)) << w;
    const std::string key = w.substr(0, w.find(':'));
    if (chosen.count(key) == 0) {
      EXPECT_EQ(g, w) << "the example changes a default";
    }
  }
}

}  // namespace
}  // namespace msgx
