// The corpus: every real message gets its expected class, and its canonical
// JSON matches the reviewed golden file (tests/golden/sis/<name>.json).
// MSGX_TEST_UPDATE_GOLDEN=1 rewrites the golden files instead of comparing.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "codecs/sis_decoder.h"
#include "codecs/sis_json.h"

namespace msgx::sis {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::vector<fs::path> CorpusFiles() {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(MSGX_CORPUS_DIR)) {
    if (e.path().extension() == ".xml") files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

ErrorClass Expected(const std::string& name) {
  if (name == "ABNR-ADD-1.xml") return ErrorClass::kMalformed;
  if (name == "AIRC-DNLD-1.xml") return ErrorClass::kProtocol;
  return ErrorClass::kOk;
}

class CodecCorpus : public ::testing::Test {
 protected:
  void SetUp() override {
    auto z = TimeZone::Load("Asia/Shanghai");
    ASSERT_TRUE(z.ok()) << z.status().ToString();
    zone_ = std::make_unique<TimeZone>(std::move(z).value());
  }
  std::unique_ptr<TimeZone> zone_;
};

TEST_F(CodecCorpus, EveryFileGetsItsClass) {
  const auto files = CorpusFiles();
  ASSERT_GE(files.size(), 172u) << "corpus at " << MSGX_CORPUS_DIR << " is incomplete";
  SisDecoder decoder(*zone_);
  int decoded = 0;
  for (const auto& f : files) {
    const std::string name = f.filename().string();
    const std::string text = ReadFile(f);
    Result<DecodedMessage> m = decoder.Decode(text, InputOrigin::kUnicodeText);
    const ErrorClass want = Expected(name);
    if (want == ErrorClass::kOk) {
      EXPECT_TRUE(m.ok()) << name << ": " << m.status().ToString();
      if (m.ok()) {
        ++decoded;
        // The file name is TYPE-STYP-N.xml.
        EXPECT_EQ(name.substr(0, name.find('-', 5)), m->meta.type + "-" + m->meta.styp);
      }
    } else {
      EXPECT_EQ(m.status().error_class(), want) << name << ": " << m.status().ToString();
    }
    // The same bytes read as a file (prolog honoured) classify the same.
    Result<DecodedMessage> raw = decoder.Decode(text, InputOrigin::kRawBytes);
    EXPECT_EQ(raw.status().error_class(), m.status().error_class()) << name;
  }
  EXPECT_EQ(decoded, static_cast<int>(files.size()) - 2);
}

TEST_F(CodecCorpus, ErrorMessagesNameTheElement) {
  SisDecoder decoder(*zone_);
  auto airc = decoder.Decode(ReadFile(fs::path(MSGX_CORPUS_DIR) / "AIRC-DNLD-1.xml"),
                             InputOrigin::kUnicodeText);
  EXPECT_EQ(airc.status().message(), "RECS: says 1 but the DNLD snapshot carries 2 AIRC records");
  auto abnr = decoder.Decode(ReadFile(fs::path(MSGX_CORPUS_DIR) / "ABNR-ADD-1.xml"),
                             InputOrigin::kUnicodeText);
  EXPECT_NE(abnr.status().message().find("not well-formed XML"), std::string::npos)
      << abnr.status().message();
}

TEST_F(CodecCorpus, GoldenJson) {
  const char* update_env = std::getenv("MSGX_TEST_UPDATE_GOLDEN");
  const bool update = update_env != nullptr && std::string(update_env) == "1";
  const fs::path dir = fs::path(MSGX_GOLDEN_DIR) / "sis";
  if (update) fs::create_directories(dir);
  SisDecoder decoder(*zone_);
  int compared = 0;
  for (const auto& f : CorpusFiles()) {
    Result<DecodedMessage> m = decoder.Decode(ReadFile(f), InputOrigin::kUnicodeText);
    const std::string json = (m.ok() ? ToCanonicalJson(*m) : ErrorToJson(m.status())) + "\n";
    // Canonical: decoding again gives the same bytes.
    Result<DecodedMessage> again = decoder.Decode(ReadFile(f), InputOrigin::kUnicodeText);
    EXPECT_EQ(json, (again.ok() ? ToCanonicalJson(*again) : ErrorToJson(again.status())) + "\n");
    const fs::path golden = dir / (f.stem().string() + ".json");
    if (update) {
      std::ofstream(golden, std::ios::binary) << json;
      continue;
    }
    ASSERT_TRUE(fs::exists(golden)) << golden << " missing; run with MSGX_TEST_UPDATE_GOLDEN=1";
    EXPECT_EQ(ReadFile(golden), json) << f.filename();
    ++compared;
  }
  if (!update) {
    EXPECT_GE(compared, 172);
  }
}

}  // namespace
}  // namespace msgx::sis
