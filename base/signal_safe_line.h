// SignalSafeLine: a line of text built and written from a signal handler.
//
// Fixed storage (512 bytes; what does not fit is dropped), no allocation,
// and only write(2) to send it: async-signal-safe. For the crash guard's
// deaths file (stream/fold/crash_guard.h) and the crash report
// (base/fatal_report.h).
//
// Thread-safety: one object per handler invocation.
#pragma once

#include <unistd.h>

#include <array>
#include <cstddef>
#include <cstdint>

namespace msgx {

class SignalSafeLine {
 public:
  void Add(const char* s) {
    while (*s != '\0' && n_ < buf_.size()) buf_[n_++] = *s++;
  }
  void AddDecimal(std::uint64_t v) { AddDigits(v, 10); }
  void AddHex(std::uint64_t v) {
    Add("0x");
    AddDigits(v, 16);
  }
  // Writes the line to `fd`, all of it unless write() fails.
  void WriteTo(int fd) const {
    std::size_t done = 0;
    while (done < n_) {
      const ssize_t w = ::write(fd, buf_.data() + done, n_ - done);
      if (w <= 0) return;
      done += static_cast<std::size_t>(w);
    }
  }

 private:
  void AddDigits(std::uint64_t v, unsigned base) {
    char tmp[20];  // 2^64 has 20 decimal digits
    std::size_t k = 0;
    do {
      tmp[k++] = "0123456789abcdef"[v % base];
      v /= base;
    } while (v > 0);
    while (k > 0 && n_ < buf_.size()) buf_[n_++] = tmp[--k];
  }

  std::array<char, 512> buf_{};
  std::size_t n_ = 0;
};

}  // namespace msgx
