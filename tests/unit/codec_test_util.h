// Helpers shared by the codec unit tests.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "codecs/sis_decoder.h"

namespace msgx::sis::testing {

inline std::string ReadCorpus(const std::string& name) {
  std::ifstream in(std::filesystem::path(MSGX_CORPUS_DIR) / name, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline const TimeZone& Shanghai() {
  static const TimeZone* zone = [] {
    auto z = TimeZone::Load("Asia/Shanghai");
    return z.ok() ? new TimeZone(std::move(z).value())
                  : new TimeZone(TimeZone::Fixed("CST", 8 * 3600));
  }();
  return *zone;
}

// A FLOP message with the given STYP and record body.
inline std::string Flop(const std::string& styp, const std::string& record) {
  return "<MSG><META><SNDR>AODB</SNDR><SEQN>1</SEQN><DTTM>20031215090311</DTTM><TYPE>FLOP</TYPE>"
         "<STYP>" +
         styp + "</STYP></META><FLOP><FLID>15</FLID><FFID>X</FFID>" + record + "</FLOP></MSG>";
}

}  // namespace msgx::sis::testing
