#include "app/data_dir.h"

#include <filesystem>

namespace msgx::app {

std::string DataDir(const std::string& name, const std::string& build_tree_default,
                    const std::string& self_exe) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = self_exe.empty() ? fs::read_symlink("/proc/self/exe", ec) : fs::path(self_exe);
  if (ec || exe.empty()) return build_tree_default;
  const fs::path installed = exe.parent_path().parent_path() / "share" / "msgx" / name;
  if (fs::is_directory(installed, ec)) return installed.string();
  return build_tree_default;
}

}  // namespace msgx::app
