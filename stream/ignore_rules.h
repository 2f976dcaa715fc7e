// IgnoreRules: SPEC §2 ignore rules, `TYPE-STYP` or `TYPE-*`,
// case-insensitive, matched after META decodes and before anything else.
//
// Thread-safety: immutable after construction.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace msgx {

class IgnoreRules {
 public:
  // Rules as configured (ignore.rules); malformed ones were refused by the
  // configuration loader, an entry without '-' matches the TYPE alone.
  explicit IgnoreRules(const std::vector<std::string>& rules);
  // The first matching rule as configured, or nullopt.
  std::optional<std::string> Match(std::string_view type, std::string_view styp) const;

 private:
  struct Rule {
    std::string original;
    std::string type;  // upper-case
    std::string styp;  // upper-case, or "*"
  };
  std::vector<Rule> rules_;
};

}  // namespace msgx
