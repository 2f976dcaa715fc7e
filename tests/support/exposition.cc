#include "tests/support/exposition.h"

#include <cmath>
#include <cstdlib>
#include <optional>
#include <set>
#include <utility>

namespace msgx::testing {
namespace {

bool IsNameStart(char c, bool colon) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon && c == ':');
}
bool IsNameChar(char c, bool colon) { return IsNameStart(c, colon) || (c >= '0' && c <= '9'); }

// The name at the start of `s` (metric names allow ':'), or "".
std::string_view TakeName(std::string_view s, bool colon) {
  if (s.empty() || !IsNameStart(s[0], colon)) return {};
  size_t n = 1;
  while (n < s.size() && IsNameChar(s[n], colon)) ++n;
  return s.substr(0, n);
}

std::optional<double> ParseValue(std::string_view v) {
  if (v == "+Inf" || v == "Inf") return HUGE_VAL;
  if (v == "-Inf") return -HUGE_VAL;
  if (v == "NaN" || v == "Nan" || v == "nan") return std::nan("");
  if (v.empty()) return std::nullopt;
  const std::string s(v);
  char* end = nullptr;
  const double d = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return d;
}

bool IsInteger(std::string_view v) {
  if (!v.empty() && v[0] == '-') v.remove_prefix(1);
  if (v.empty()) return false;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// The family a sample belongs to, given the TYPE lines seen so far.
std::string FamilyOf(const std::string& sample, const std::map<std::string, std::string>& types) {
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string_view sv(suffix);
    if (sample.size() > sv.size() &&
        sample.compare(sample.size() - sv.size(), sv.size(), sv) == 0) {
      std::string base = sample.substr(0, sample.size() - sv.size());
      auto it = types.find(base);
      if (it == types.end()) continue;
      if (it->second == "histogram" || (it->second == "summary" && sv != "_bucket")) return base;
    }
  }
  return sample;
}

Status LineError(int line, const std::string& why) {
  return Status::Malformed("line " + std::to_string(line) + ": " + why);
}

// Parses `{a="1",b="2"}` at the start of `s`; moves `s` past it.
Status ParseLabels(std::string_view* s, int line, std::map<std::string, std::string>* out) {
  s->remove_prefix(1);  // '{'
  while (true) {
    if (s->empty()) return LineError(line, "unterminated label set");
    if ((*s)[0] == '}') {
      s->remove_prefix(1);
      return Status::Ok();
    }
    const std::string_view name = TakeName(*s, false);
    if (name.empty()) return LineError(line, "bad label name");
    if (name.substr(0, 2) == "__")
      return LineError(line, "reserved label name " + std::string(name));
    s->remove_prefix(name.size());
    if (s->size() < 2 || (*s)[0] != '=' || (*s)[1] != '"') {
      return LineError(line, "label " + std::string(name) + " is not name=\"value\"");
    }
    s->remove_prefix(2);
    std::string value;
    bool closed = false;
    while (!s->empty()) {
      const char c = (*s)[0];
      s->remove_prefix(1);
      if (c == '"') {
        closed = true;
        break;
      }
      if (c == '\n') return LineError(line, "newline in a label value");
      if (c == '\\') {
        if (s->empty()) break;
        const char e = (*s)[0];
        s->remove_prefix(1);
        if (e == 'n') {
          value += '\n';
        } else if (e == '\\' || e == '"') {
          value += e;
        } else {
          return LineError(line, std::string("bad escape \\") + e + " in a label value");
        }
        continue;
      }
      value += c;
    }
    if (!closed) return LineError(line, "unterminated label value");
    if (!out->emplace(std::string(name), std::move(value)).second) {
      return LineError(line, "label " + std::string(name) + " twice");
    }
    if (!s->empty() && (*s)[0] == ',') {
      s->remove_prefix(1);
    } else if (s->empty() || (*s)[0] != '}') {
      return LineError(line, "labels must be separated by ','");
    }
  }
}

std::string SeriesKey(const ExpositionSample& s) {
  std::string k = s.name;
  for (const auto& [n, v] : s.labels) {
    k += '\x1f';
    k += n;
    k += '=';
    k += v;
  }
  return k;
}

Status CheckHistogram(const ExpositionFamily& f) {
  struct Group {
    std::vector<std::pair<double, double>> buckets;  // le, count
    std::optional<double> count;
    bool sum = false;
  };
  std::map<std::map<std::string, std::string>, Group> groups;
  for (const auto& s : f.samples) {
    auto labels = s.labels;
    if (s.name == f.name + "_bucket") {
      auto le = labels.find("le");
      if (le == labels.end()) return Status::Malformed(f.name + "_bucket without le");
      auto bound = ParseValue(le->second);
      if (!bound) return Status::Malformed(f.name + ": bad le \"" + le->second + "\"");
      labels.erase(le);
      groups[labels].buckets.emplace_back(*bound, s.value);
    } else if (s.name == f.name + "_count") {
      groups[labels].count = s.value;
    } else if (s.name == f.name + "_sum") {
      groups[labels].sum = true;
    } else {
      return Status::Malformed("histogram " + f.name + " has sample " + s.name);
    }
  }
  for (const auto& [labels, g] : groups) {
    if (g.buckets.empty()) return Status::Malformed(f.name + ": a series without buckets");
    for (size_t i = 1; i < g.buckets.size(); ++i) {
      if (!(g.buckets[i].first > g.buckets[i - 1].first)) {
        return Status::Malformed(f.name + ": buckets not ascending by le");
      }
      if (g.buckets[i].second < g.buckets[i - 1].second) {
        return Status::Malformed(f.name + ": bucket counts fall");
      }
    }
    if (!std::isinf(g.buckets.back().first)) {
      return Status::Malformed(f.name + ": the last bucket is not le=\"+Inf\"");
    }
    if (!g.count) return Status::Malformed(f.name + ": no _count");
    if (*g.count != g.buckets.back().second) {
      return Status::Malformed(f.name + ": _count differs from the +Inf bucket");
    }
    if (!g.sum) return Status::Malformed(f.name + ": no _sum");
  }
  return Status::Ok();
}

Status CheckSummary(const ExpositionFamily& f) {
  for (const auto& s : f.samples) {
    if (s.name == f.name) {
      if (!s.labels.contains("quantile")) return Status::Malformed(f.name + " without quantile");
    } else if (s.name != f.name + "_sum" && s.name != f.name + "_count") {
      return Status::Malformed("summary " + f.name + " has sample " + s.name);
    }
  }
  return Status::Ok();
}

}  // namespace

const ExpositionFamily* Exposition::Find(const std::string& name) const {
  auto it = families.find(name);
  return it == families.end() ? nullptr : &it->second;
}

std::vector<ExpositionSample> Exposition::Samples(
    const std::string& sample, const std::map<std::string, std::string>& labels) const {
  std::vector<ExpositionSample> out;
  for (const auto& [name, f] : families) {
    for (const auto& s : f.samples) {
      if (s.name != sample) continue;
      bool match = true;
      for (const auto& [k, v] : labels) {
        auto it = s.labels.find(k);
        if (it == s.labels.end() || it->second != v) match = false;
      }
      if (match) out.push_back(s);
    }
  }
  return out;
}

Result<Exposition> ParseExposition(std::string_view text) {
  if (text.empty() || text.back() != '\n') return Status::Malformed("text does not end with \\n");
  Exposition out;
  std::map<std::string, std::string> types;
  std::set<std::string> helped;
  std::set<std::string> closed;  // families whose lines have ended
  std::set<std::string> series;
  std::string current;  // the family of the last line
  auto enter = [&](const std::string& family, int line) -> Status {
    if (family == current) return Status::Ok();
    if (closed.contains(family)) {
      return LineError(line, "family " + family + " continues after another family's lines");
    }
    if (!current.empty()) closed.insert(current);
    current = family;
    return Status::Ok();
  };
  int line_no = 0;
  size_t at = 0;
  while (at < text.size()) {
    const size_t eol = text.find('\n', at);
    std::string_view line = text.substr(at, eol - at);
    at = eol + 1;
    ++line_no;
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::string_view rest = line.substr(1);
      const bool help = rest.substr(0, 6) == " HELP ";
      const bool type = rest.substr(0, 6) == " TYPE ";
      if (!help && !type) continue;  // a comment
      rest.remove_prefix(6);
      const std::string name(TakeName(rest, true));
      if (name.empty()) return LineError(line_no, "bad metric name after HELP/TYPE");
      rest.remove_prefix(name.size());
      if (!rest.empty() && rest[0] != ' ') return LineError(line_no, "bad metric name " + name);
      if (!rest.empty()) rest.remove_prefix(1);
      if (Status s = enter(name, line_no); !s.ok()) return s;
      ExpositionFamily& f = out.families[name];
      f.name = name;
      if (!f.samples.empty()) return LineError(line_no, "HELP/TYPE of " + name + " after samples");
      if (help) {
        if (!helped.insert(name).second) return LineError(line_no, "second HELP for " + name);
        f.help = std::string(rest);
      } else {
        static const std::set<std::string_view> kTypes = {"counter", "gauge", "histogram",
                                                          "summary", "untyped"};
        if (!kTypes.contains(rest)) return LineError(line_no, "unknown type " + std::string(rest));
        if (types.contains(name)) return LineError(line_no, "second TYPE for " + name);
        types[name] = std::string(rest);
        f.type = std::string(rest);
      }
      continue;
    }
    ExpositionSample sample;
    std::string_view rest = line;
    sample.name = std::string(TakeName(rest, true));
    if (sample.name.empty()) return LineError(line_no, "bad metric name");
    rest.remove_prefix(sample.name.size());
    if (!rest.empty() && rest[0] == '{') {
      if (Status s = ParseLabels(&rest, line_no, &sample.labels); !s.ok()) return s;
    }
    if (rest.empty() || rest[0] != ' ') return LineError(line_no, "no value");
    rest.remove_prefix(1);
    const size_t space = rest.find(' ');
    auto value = ParseValue(rest.substr(0, space));
    if (!value)
      return LineError(line_no, "bad value \"" + std::string(rest.substr(0, space)) + "\"");
    if (space != std::string_view::npos && !IsInteger(rest.substr(space + 1))) {
      return LineError(line_no, "bad timestamp");
    }
    sample.value = *value;
    const std::string family = FamilyOf(sample.name, types);
    if (Status s = enter(family, line_no); !s.ok()) return s;
    if (!series.insert(SeriesKey(sample)).second) {
      return LineError(line_no, "series " + sample.name + " twice");
    }
    ExpositionFamily& f = out.families[family];
    f.name = family;
    if (f.type.empty()) f.type = "untyped";
    if (f.type == "counter" && (std::isnan(sample.value) || sample.value < 0)) {
      return LineError(line_no, "counter " + family + " is negative or NaN");
    }
    if ((f.type == "counter" || f.type == "gauge" || f.type == "untyped") &&
        sample.name != family) {
      return LineError(line_no, "sample " + sample.name + " in family " + family);
    }
    f.samples.push_back(std::move(sample));
  }
  for (auto& [name, f] : out.families) {
    if (f.type.empty()) f.type = "untyped";
    if (f.type == "histogram") {
      if (Status s = CheckHistogram(f); !s.ok()) return s;
    } else if (f.type == "summary") {
      if (Status s = CheckSummary(f); !s.ok()) return s;
    }
  }
  return out;
}

}  // namespace msgx::testing
