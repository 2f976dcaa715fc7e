#include "codecs/sis_fields.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <iterator>
#include <utility>

namespace msgx::sis {
namespace {

struct FlopRow {
  std::string_view styp;
  FlopStypInfo info;
};

constexpr FlopRow kFlopTable[] = {
    {"ABTM", {FlopKind::kList, "ASNO", true}},   {"ACFT", {FlopKind::kText, {}, true}},
    {"APPT", {FlopKind::kTimeClear, {}, true}},  {"BOTM", {FlopKind::kTimeClear, {}, true}},
    {"CHDT", {FlopKind::kList, "CHNO", true}},   {"CHOT", {FlopKind::kList, "CSNO", true}},
    {"CKDT", {FlopKind::kList, "CKNO", true}},   {"CLDT", {FlopKind::kList, "CLNO", true}},
    {"CNCL", {FlopKind::kTimeClear, {}, true}},  {"COBT", {FlopKind::kTimeReject, {}, true}},
    {"CTOT", {FlopKind::kTimeReject, {}, true}}, {"DELY", {FlopKind::kDely, "CODE", true}},
    {"EGSR", {FlopKind::kTimeClear, {}, true}},  {"EGST", {FlopKind::kTimeClear, {}, true}},
    {"EOBT", {FlopKind::kTimeReject, {}, true}}, {"ERUT", {FlopKind::kList, "RTNO", true}},
    {"EXSS", {FlopKind::kExss, {}, true}},       {"FDEL", {FlopKind::kFdel, {}, true}},
    {"FDIV", {FlopKind::kFdiv, {}, true}},       {"FINT", {FlopKind::kTimeClear, {}, true}},
    {"FLAB", {FlopKind::kFlab, {}, true}},       {"FLIN", {FlopKind::kChar, {}, true}},
    {"FLTY", {FlopKind::kChar, {}, true}},       {"FRET", {FlopKind::kFret, {}, true}},
    {"FTSS", {FlopKind::kText, {}, true}},       {"GTDT", {FlopKind::kList, "GTNO", true}},
    {"HNAG", {FlopKind::kHnag, {}, true}},       {"IEST", {FlopKind::kTimeReject, {}, true}},
    {"LACL", {FlopKind::kTimeClear, {}, true}},  {"MAXP", {FlopKind::kInt, {}, true}},
    {"NAAT", {FlopKind::kTimeReject, {}, true}}, {"NEAT", {FlopKind::kTimeReject, {}, true}},
    {"PADT", {FlopKind::kTimeReject, {}, true}}, {"PEDT", {FlopKind::kTimeReject, {}, true}},
    {"PORT", {FlopKind::kPort, {}, true}},       {"PSDT", {FlopKind::kList, "PSNO", true}},
    {"PSHT", {FlopKind::kList, "PSHN", true}},   {"REMC", {FlopKind::kText, {}, true}},
    {"RENO", {FlopKind::kText, {}, true}},       {"RUNW", {FlopKind::kText, {}, true}},
    {"SRVT", {FlopKind::kList, "SRTC", false}},  {"STND", {FlopKind::kText, {}, true}},
    {"TAOP", {FlopKind::kTaop, {}, true}},       {"TIPT", {FlopKind::kList, "TRST", false}},
    {"TOBT", {FlopKind::kTimeReject, {}, true}}, {"TRML", {FlopKind::kText, {}, true}},
    {"VIPF", {FlopKind::kList, "VPCD", false}},  {"VIPP", {FlopKind::kVipp, {}, true}},
};

constexpr std::pair<std::string_view, std::string_view> kReferenceKeys[] = {
    {"ABDG", "ABCD"}, {"ABNR", "ANRC"}, {"AIRC", "ITAT"}, {"AIRL", "ITOP"}, {"ARPT", "ITCD"},
    {"BLST", "BCOD"}, {"CHLT", "CCOD"}, {"CITY", "ITCD"}, {"CLST", "CCOD"}, {"COUL", "COUC"},
    {"DLYL", "DCOD"}, {"FLTL", "FTYP"}, {"GLST", "GCOD"}, {"HLTR", "HLTC"}, {"ORGN", "OGID"},
    {"PLST", "PCOD"}, {"REGL", "REGC"}, {"REGN", "RNUM"}, {"SLST", "SCOD"}, {"STTS", "STTC"},
    {"TLST", "TCOD"}, {"VIPL", "VPCD"}, {"VIPS", "VSCD"},
};

// Element names that are ddMMMyyHHmm times wherever they appear in FLOP and
// SCHD/SCHS bodies (taken from the FLOP table, docs/fold.md#flop-updates,
// and the corpus).
constexpr std::string_view kDayTimeNames[] = {
    "AOTM", "APPT", "BOTM", "CBTM", "CETM", "CHTM", "CNCL", "COBT", "COTM", "CTOT",
    "EGSR", "EGST", "EOBT", "FINT", "GCTM", "GOTM", "IEST", "LACL", "NAAT", "NEAT",
    "PADT", "PCBT", "PCCT", "PCET", "PCOT", "PEDT", "PGCT", "PGOT", "POTM", "PSTM",
    "SCAT", "SCDT", "SODT", "SRET", "SRST", "STET", "STST", "TOBT", "TRTM",
};

constexpr std::string_view kDateNames[] = {"EDAT", "EDDT", "SDAT", "STDT"};

std::uint32_t Pack(std::string_view s) {
  std::uint32_t v = 0;
  for (std::size_t i = 0; i < 4 && i < s.size(); ++i) {
    v = (v << 8) | static_cast<unsigned char>(s[i]);
  }
  return v;
}

template <typename Range, typename T>
bool Contains(const Range& r, const T& v) {
  return std::find(std::begin(r), std::end(r), v) != std::end(r);
}

}  // namespace

const FlopStypInfo* FindFlopStyp(std::string_view styp) {
  for (const FlopRow& row : kFlopTable) {
    if (row.styp == styp) return &row.info;
  }
  return nullptr;
}

std::string_view ReferenceKeyField(std::string_view type) {
  for (const auto& [t, key] : kReferenceKeys) {
    if (t == type) return key;
  }
  return {};
}

bool IsSupported(std::string_view type, std::string_view styp) {
  if (type == "FLOP") return FindFlopStyp(styp) != nullptr;
  if (type == "SCHD") {
    return styp == "DNLD" || styp == "RESP" || styp == "DEL" || styp == "ADFT" || styp == "ADD" ||
           styp == "UPD";
  }
  if (type == "SCHS") return styp == "DNLD" || styp == "RESP" || styp == "ADD" || styp == "UPD";
  if (!ReferenceKeyField(type).empty()) {
    return styp == "ADD" || styp == "UPD" || styp == "DEL" || styp == "DNLD" || styp == "RESP";
  }
  return false;
}

std::optional<TimeFormat> TimeFormatOf(FieldContext context, std::string_view parent,
                                       std::string_view name) {
  // Every SIS element name is four characters: compare packed integers (this
  // runs for each element of a 500-flight schedule).
  if (context == FieldContext::kNone || name.size() != 4) return std::nullopt;
  static const auto kPacked = [] {
    std::array<std::uint32_t, std::size(kDayTimeNames)> day{};
    std::array<std::uint32_t, std::size(kDateNames)> date{};
    for (std::size_t i = 0; i < day.size(); ++i) day[i] = Pack(kDayTimeNames[i]);
    for (std::size_t i = 0; i < date.size(); ++i) date[i] = Pack(kDateNames[i]);
    return std::make_pair(day, date);
  }();
  const std::uint32_t key = Pack(name);
  if (context == FieldContext::kSchs) {
    if (name == "SCHT") return TimeFormat::kHhmm;
    if (parent == "ROUT" && (name == "SCAT" || name == "SCDT")) return TimeFormat::kHhmm;
  }
  if (Contains(kPacked.second, key)) return TimeFormat::kDate;
  if (Contains(kPacked.first, key)) return TimeFormat::kDayTime;
  return std::nullopt;
}

}  // namespace msgx::sis
