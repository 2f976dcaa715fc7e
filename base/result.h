// Result<T>: a value or a non-OK Status (g++ 12 has no std::expected).
//
// REQUIRES: a Result built from a Status is built from a non-OK one.
// Accessing value() of an error Result, or status() of a value Result
// returns an OK Status, is a programming error (asserted in debug builds).
#pragma once

#include <cassert>
#include <optional>
#include <utility>

#include "base/status.h"

namespace msgx {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {  // NOLINT(google-explicit-constructor)
    assert(!status_.ok());
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }

  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace msgx
