#include "base/thread_name.h"

#include <pthread.h>
#include <sys/prctl.h>

#include <array>
#include <cstring>

namespace msgx {

void SetCurrentThreadName(std::string_view name) {
  std::array<char, kMaxThreadName + 1> cut{};
  const std::size_t n = name.size() < kMaxThreadName ? name.size() : kMaxThreadName;
  std::memcpy(cut.data(), name.data(), n);
  ::pthread_setname_np(::pthread_self(), cut.data());  // cannot fail once cut
}

std::size_t CurrentThreadName(char* buf) {
  // PR_GET_NAME writes up to 16 bytes, NUL included.
  char name[kMaxThreadName + 1] = {};
  if (::prctl(PR_GET_NAME, name, 0, 0, 0) != 0) {
    buf[0] = '\0';
    return 0;
  }
  name[kMaxThreadName] = '\0';
  std::size_t n = 0;
  while (name[n] != '\0') {
    buf[n] = name[n];
    ++n;
  }
  buf[n] = '\0';
  return n;
}

}  // namespace msgx
