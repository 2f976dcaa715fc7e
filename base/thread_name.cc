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
  // PR_GET_NAME writes the name and its NUL into 16 bytes.
  if (::prctl(PR_GET_NAME, buf, 0, 0, 0) != 0) buf[0] = '\0';
  buf[kMaxThreadName] = '\0';
  return std::strlen(buf);
}

}  // namespace msgx
