#include "codecs/ignore_rules.h"

namespace msgx::sis {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

bool EqualsIgnoreCase(std::string_view upper, std::string_view s) {
  if (upper.size() != s.size()) return false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (c != upper[i]) return false;
  }
  return true;
}

}  // namespace

Result<IgnoreRules> IgnoreRules::Parse(const std::vector<std::string>& rules) {
  IgnoreRules out;
  for (const std::string& r : rules) {
    const std::size_t dash = r.find('-');
    const bool bad = dash == std::string::npos || dash == 0 || dash + 1 == r.size() ||
                     r.find('-', dash + 1) != std::string::npos ||
                     r.find_first_of(" \t") != std::string::npos ||
                     (r.find('*') != std::string::npos && r.substr(dash + 1) != "*");
    if (bad) {
      return Status::Config("ignore.rules: \"" + r + "\" is not TYPE-STYP or TYPE-*");
    }
    out.rules_.push_back({r, Upper(r.substr(0, dash)), Upper(r.substr(dash + 1))});
  }
  return out;
}

std::optional<std::string> IgnoreRules::Match(std::string_view type, std::string_view styp) const {
  for (const Rule& r : rules_) {
    if (EqualsIgnoreCase(r.type, type) && (r.styp == "*" || EqualsIgnoreCase(r.styp, styp))) {
      return r.original;
    }
  }
  return std::nullopt;
}

}  // namespace msgx::sis
