// Thread names: what `top -H`, perf, gdb and the fatal-signal report
// (base/fatal_report.h) call a thread.
//
// Linux keeps at most 15 bytes of a thread's name; SetCurrentThreadName
// keeps the first 15 bytes of `name` rather than failing on a longer one.
#pragma once

#include <cstddef>
#include <string_view>

namespace msgx {

// The kernel's limit on a thread name, without its terminating NUL.
inline constexpr std::size_t kMaxThreadName = 15;

// Names the calling thread; a longer name is cut to kMaxThreadName bytes.
void SetCurrentThreadName(std::string_view name);

// Copies the calling thread's name into buf (NUL-terminated, at most
// kMaxThreadName bytes before the NUL) and returns its length; 0 when the
// kernel does not tell. REQUIRES: buf holds kMaxThreadName + 1 bytes.
// Async-signal-safe (one prctl system call, then strlen).
std::size_t CurrentThreadName(char* buf);

}  // namespace msgx
