// Where msgx's data files are (docs/operations.md#install): an installed
// msgx (`cmake --install`) finds them next to itself, at
// <dir of the binary>/../share/msgx/<name>; a binary in a build tree, which
// has no such directory, uses the source-tree folder compiled in. A flag
// (`msgx migrate --migrations-dir`, `msgx dev load --corpus`) overrides both.
#pragma once

#include <string>

namespace msgx::app {

// `self_exe` is the running binary's path (/proc/self/exe when empty).
std::string DataDir(const std::string& name, const std::string& build_tree_default,
                    const std::string& self_exe = "");

}  // namespace msgx::app
