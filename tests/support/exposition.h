// A strict reader of the Prometheus text exposition format (version 0.0.4),
// for tests of GET /metrics. ParseExposition() refuses, naming the line and
// the rule, text that breaks any of:
//   - the text ends with a newline; lines are "# HELP name text",
//     "# TYPE name type" (counter, gauge, histogram, summary, untyped),
//     other "#" comments, empty lines, or samples;
//   - a sample is `name{label="value",...} value [timestamp]`: names match
//     [a-zA-Z_:][a-zA-Z0-9_:]*, label names [a-zA-Z_][a-zA-Z0-9_]* and do
//     not start with "__", a label appears once per sample, label values are
//     quoted with only \\, \" and \n escaped, the value is a float (or +Inf,
//     -Inf, NaN) and the timestamp an integer;
//   - HELP and TYPE come at most once per family and before its samples; a
//     family's lines are not interleaved with another's; no series twice;
//   - a histogram's samples are name_bucket (with "le"), name_sum and
//     name_count; per label set the buckets ascend by le, their counts do
//     not fall, the last is le="+Inf" and equals name_count; name_sum is
//     there; a summary's are name (with "quantile"), name_sum and
//     name_count;
//   - a counter's values are not negative.
// A sample with no TYPE line is its own untyped family.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace msgx::testing {

struct ExpositionSample {
  std::string name;  // as written: x_bucket, x_sum, ...
  std::map<std::string, std::string> labels;
  double value = 0;
};

struct ExpositionFamily {
  std::string name;
  std::string type;  // "untyped" without a TYPE line
  std::string help;
  std::vector<ExpositionSample> samples;
};

struct Exposition {
  std::map<std::string, ExpositionFamily> families;

  // The family `name`, or null.
  const ExpositionFamily* Find(const std::string& name) const;
  // The samples named `sample` (a family's name, or name_bucket, …) whose
  // labels include every one of `labels`.
  std::vector<ExpositionSample> Samples(
      const std::string& sample, const std::map<std::string, std::string>& labels = {}) const;
};

Result<Exposition> ParseExposition(std::string_view text);

}  // namespace msgx::testing
