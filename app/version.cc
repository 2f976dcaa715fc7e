#include "app/version.h"

#include "stream/fold/fold.h"

namespace msgx::app {

VersionInfo Version() { return {MSGX_VERSION, kFoldVersion, MSGX_SCHEMA_VERSION}; }

std::string VersionText() {
  const VersionInfo v = Version();
  return "msgx " + v.version + "\nfold version " + std::to_string(v.fold_version) +
         "\nschema version " + std::to_string(v.schema_version) + "\n";
}

}  // namespace msgx::app
