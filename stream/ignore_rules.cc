#include "stream/ignore_rules.h"

namespace msgx {
namespace {

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
  }
  return out;
}

}  // namespace

IgnoreRules::IgnoreRules(const std::vector<std::string>& rules) {
  for (const std::string& r : rules) {
    const std::size_t dash = r.find('-');
    Rule rule;
    rule.original = r;
    rule.type = Upper(r.substr(0, dash));
    rule.styp = dash == std::string::npos ? "*" : Upper(r.substr(dash + 1));
    rules_.push_back(std::move(rule));
  }
}

std::optional<std::string> IgnoreRules::Match(std::string_view type, std::string_view styp) const {
  const std::string t = Upper(type);
  const std::string s = Upper(styp);
  for (const Rule& r : rules_) {
    if (r.type == t && (r.styp == "*" || r.styp == s)) return r.original;
  }
  return std::nullopt;
}

}  // namespace msgx
