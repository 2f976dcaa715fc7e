// Decode throughput of the SIS codec (docs/performance.md, "Codec").
//
// Each decode benchmark has a baseline from the same binary and run:
// pugixml parsing the same bytes into a DOM and nothing else (no encoding
// check, no META, no typed body). items/s = messages/s; bytes/s = input MB/s.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <pugixml.hpp>
#include <string>

#include "codecs/sis_decoder.h"

namespace {

using msgx::sis::InputOrigin;

std::string ReadCorpus(const char* name) {
  std::ifstream in(std::filesystem::path(MSGX_CORPUS_DIR) / name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

const msgx::TimeZone& Zone() {
  static const msgx::TimeZone zone = [] {
    auto z = msgx::TimeZone::Load("Asia/Shanghai");
    return z.ok() ? std::move(z).value() : msgx::TimeZone::Fixed("CST", 8 * 3600);
  }();
  return zone;
}

// `n` copies of the first record element named `record` (start tag prefix),
// with RECS set to n and, when `key` is given, <key> made unique.
std::string Replicate(const std::string& msg, const std::string& record, int n,
                      const std::string& key) {
  const std::string open = "<" + record + ">";
  const std::string close = "</" + record + ">";
  const std::size_t b = msg.find(open);
  const std::size_t e = msg.find(close, b) + close.size();
  const std::string one = msg.substr(b, e - b);
  std::string body;
  for (int i = 0; i < n; ++i) {
    std::string r = one;
    if (!key.empty()) {
      const std::string kopen = "<" + key + ">";
      const std::size_t kb = r.find(kopen) + kopen.size();
      const std::size_t ke = r.find("</" + key + ">", kb);
      r.replace(kb, ke - kb, std::to_string(100000 + i));
    }
    body += r;
    body += "\n";
  }
  const std::size_t last = msg.rfind(close) + close.size();
  std::string out = msg.substr(0, b) + body + msg.substr(last);
  const std::size_t rb = out.find("<RECS>") + 6;
  out.replace(rb, out.find("</RECS>") - rb, std::to_string(n));
  return out;
}

const std::string& FlopMessage() {
  static const std::string s = ReadCorpus("FLOP-GTDT-1.xml");
  return s;
}
const std::string& SimpleFlopMessage() {
  static const std::string s = ReadCorpus("FLOP-ACFT-1.xml");
  return s;
}
const std::string& Schd500() {
  static const std::string s = Replicate(ReadCorpus("SCHD-DNLD-1.xml"), "FLTR", 500, "FLID");
  return s;
}
const std::string& RefDnld() {
  static const std::string s = ReadCorpus("ARPT-DNLD-1.xml");
  return s;
}
const std::string& RefDnld500() {
  static const std::string s = Replicate(ReadCorpus("ARPT-DNLD-1.xml"), "ARPT", 500, "ITCD");
  return s;
}

void Decode(benchmark::State& state, const std::string& msg) {
  const msgx::sis::SisDecoder decoder(Zone());
  if (!decoder.Decode(msg, InputOrigin::kUnicodeText).ok()) {
    state.SkipWithError("sample does not decode");
    return;
  }
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    auto m = decoder.Decode(msg, InputOrigin::kUnicodeText);
    benchmark::DoNotOptimize(m);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(msg.size()));
}

void PugixmlOnly(benchmark::State& state, const std::string& msg) {
  for (auto _ : state) {  // NOLINT(clang-analyzer-deadcode.DeadStores): the benchmark loop
    pugi::xml_document doc;
    auto r = doc.load_buffer(msg.data(), msg.size(), pugi::parse_default, pugi::encoding_utf8);
    benchmark::DoNotOptimize(r);
  }
  state.SetItemsProcessed(state.iterations());
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(msg.size()));
}

void BM_Codec_FlopGtdt(benchmark::State& s) { Decode(s, FlopMessage()); }
void BM_Codec_FlopAcft(benchmark::State& s) { Decode(s, SimpleFlopMessage()); }
void BM_Codec_Schd500(benchmark::State& s) { Decode(s, Schd500()); }
void BM_Codec_RefDnld(benchmark::State& s) { Decode(s, RefDnld()); }
void BM_Codec_RefDnld500(benchmark::State& s) { Decode(s, RefDnld500()); }
void BM_Baseline_Pugixml_FlopGtdt(benchmark::State& s) { PugixmlOnly(s, FlopMessage()); }
void BM_Baseline_Pugixml_FlopAcft(benchmark::State& s) { PugixmlOnly(s, SimpleFlopMessage()); }
void BM_Baseline_Pugixml_Schd500(benchmark::State& s) { PugixmlOnly(s, Schd500()); }
void BM_Baseline_Pugixml_RefDnld(benchmark::State& s) { PugixmlOnly(s, RefDnld()); }
void BM_Baseline_Pugixml_RefDnld500(benchmark::State& s) { PugixmlOnly(s, RefDnld500()); }

BENCHMARK(BM_Codec_FlopGtdt);
BENCHMARK(BM_Baseline_Pugixml_FlopGtdt);
BENCHMARK(BM_Codec_FlopAcft);
BENCHMARK(BM_Baseline_Pugixml_FlopAcft);
BENCHMARK(BM_Codec_Schd500);
BENCHMARK(BM_Baseline_Pugixml_Schd500);
BENCHMARK(BM_Codec_RefDnld);
BENCHMARK(BM_Baseline_Pugixml_RefDnld);
BENCHMARK(BM_Codec_RefDnld500);
BENCHMARK(BM_Baseline_Pugixml_RefDnld500);

}  // namespace
