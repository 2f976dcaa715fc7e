#include "base/failpoint.h"

#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

namespace msgx {
namespace {

struct Armed {
  std::string name, arg, action;
  long nth = 0;  // arg "#N": the N-th hit, whatever its argument
  std::shared_ptr<std::atomic<long>> hits = std::make_shared<std::atomic<long>>(0);
};

std::vector<Armed> Parse() {
  std::vector<Armed> t;
  const char* spec = std::getenv("MSGX_TEST_FAILPOINTS");
  if (spec == nullptr) return t;
  std::stringstream in(spec);
  std::string entry;
  while (std::getline(in, entry, ',')) {
    size_t a = entry.find(':');
    size_t b = a == std::string::npos ? a : entry.find(':', a + 1);
    if (b == std::string::npos) continue;
    Armed f{entry.substr(0, a), entry.substr(a + 1, b - a - 1), entry.substr(b + 1)};
    if (f.arg.size() > 1 && f.arg[0] == '#') f.nth = std::strtol(f.arg.c_str() + 1, nullptr, 10);
    t.push_back(std::move(f));
  }
  return t;
}

std::vector<Armed>& Table() {
  static std::vector<Armed> table = Parse();
  return table;
}

}  // namespace

namespace {

// True when `f` matches this hit of (name, arg); counts the hit.
bool Matches(const Armed& f, std::string_view name, std::string_view arg) {
  if (f.name != name) return false;
  if (f.nth > 0) return f.hits->fetch_add(1) + 1 == f.nth;
  return f.arg.empty() || f.arg == arg;
}

}  // namespace

void FailpointsReloadForTesting() { Table() = Parse(); }

void FailpointHit(std::string_view name, std::string_view arg) {
  for (const Armed& f : Table()) {
    if (f.action == "error" || !Matches(f, name, arg)) continue;
    if (f.action == "abort") std::raise(SIGABRT);
    if (f.action == "kill") std::raise(SIGKILL);
    if (f.action == "exit") _exit(86);
  }
}

bool FailpointError(std::string_view name, std::string_view arg) {
  for (const Armed& f : Table()) {
    if (f.action == "error" && Matches(f, name, arg)) return true;
  }
  return false;
}

}  // namespace msgx
