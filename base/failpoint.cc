#include "base/failpoint.h"

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace msgx {
namespace {

struct Armed {
  std::string name, arg, action;
};

const std::vector<Armed>& Table() {
  static const std::vector<Armed> table = [] {
    std::vector<Armed> t;
    const char* spec = std::getenv("MSGX_TEST_FAILPOINTS");
    if (spec == nullptr) return t;
    std::stringstream in(spec);
    std::string entry;
    while (std::getline(in, entry, ',')) {
      size_t a = entry.find(':');
      size_t b = a == std::string::npos ? a : entry.find(':', a + 1);
      if (b == std::string::npos) continue;
      t.push_back({entry.substr(0, a), entry.substr(a + 1, b - a - 1), entry.substr(b + 1)});
    }
    return t;
  }();
  return table;
}

}  // namespace

void FailpointHit(std::string_view name, std::string_view arg) {
  for (const Armed& f : Table()) {
    if (f.name != name || (!f.arg.empty() && f.arg != arg)) continue;
    if (f.action == "abort") std::raise(SIGABRT);
    if (f.action == "kill") std::raise(SIGKILL);
    if (f.action == "exit") _exit(86);
  }
}

}  // namespace msgx
