// IgnoreRules: the ignore rules (docs/codec.md#ignore-rules), matched after
// META decodes and before the body is decoded (and before identity binding
// and the UNSUPPORTED check).
//
// A rule is `TYPE-STYP` or `TYPE-*`, case-insensitive (Config::ignore_rules,
// baseline LDM-* REGN-* RSTA-* EROR-*). Match() returns the rule as it was
// configured, for `last_error = ignored:<rule>`; when several match, the
// first in configuration order wins.
//
// Thread-safety: immutable after Parse(); Match() is pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace msgx::sis {

class IgnoreRules {
 public:
  // kConfig naming `ignore.rules` for a rule that is not TYPE-STYP / TYPE-*
  // (TYPE and STYP non-empty, no spaces, one '-').
  static Result<IgnoreRules> Parse(const std::vector<std::string>& rules);

  // The matching rule as configured, or nullopt.
  std::optional<std::string> Match(std::string_view type, std::string_view styp) const;

  std::size_t size() const { return rules_.size(); }

 private:
  struct Rule {
    std::string original;
    std::string type;  // upper-cased
    std::string styp;  // upper-cased; "*" = any
  };
  std::vector<Rule> rules_;
};

}  // namespace msgx::sis
