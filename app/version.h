// What this binary is: its version (the CMake project version), the fold
// version it folds with (stream/fold/fold.h, kFoldVersion) and the schema
// version it migrates to (the highest V<n> under migrations/).
// `msgx --version` and `msgx version` print VersionText().
#pragma once

#include <cstdint>
#include <string>

namespace msgx::app {

struct VersionInfo {
  std::string version;          // "0.19.0"
  std::int64_t fold_version;    // kFoldVersion
  std::int64_t schema_version;  // the latest migration's number
};

VersionInfo Version();

// Three lines:
//   msgx 0.19.0
//   fold version 3
//   schema version 4
std::string VersionText();

}  // namespace msgx::app
