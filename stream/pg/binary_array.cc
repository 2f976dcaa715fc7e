#include "stream/pg/binary_array.h"

#include <cassert>
#include <limits>

namespace msgx {
namespace {

// ndim, flags, element OID, then one dimension's length and lower bound.
constexpr size_t kHeaderBytes = 20;
// 2000-01-01 00:00:00 UTC in microseconds since the Unix epoch.
constexpr MicrosSinceEpoch kPgEpochMicros = 946'684'800'000'000;

void Put32(std::string& out, std::uint32_t v) {
  const char b[4] = {static_cast<char>(v >> 24), static_cast<char>(v >> 16),
                     static_cast<char>(v >> 8), static_cast<char>(v)};
  out.append(b, sizeof b);
}

void Put64(std::string& out, std::uint64_t v) {
  Put32(out, static_cast<std::uint32_t>(v >> 32));
  Put32(out, static_cast<std::uint32_t>(v));
}

void Set32(std::string& out, size_t at, std::uint32_t v) {
  out[at] = static_cast<char>(v >> 24);
  out[at + 1] = static_cast<char>(v >> 16);
  out[at + 2] = static_cast<char>(v >> 8);
  out[at + 3] = static_cast<char>(v);
}

}  // namespace

PgBinaryArray::PgBinaryArray(PgElementType type) : type_(type), bytes_(kHeaderBytes, '\0') {}

void PgBinaryArray::AddLength(std::int32_t n) {
  Put32(bytes_, static_cast<std::uint32_t>(n));
  ++count_;
}

void PgBinaryArray::AddText(std::string_view v) {
  assert(type_ == PgElementType::kText);
  assert(v.size() <= static_cast<size_t>(std::numeric_limits<std::int32_t>::max()));
  AddLength(static_cast<std::int32_t>(v.size()));
  bytes_.append(v);
}

void PgBinaryArray::AddInt8(std::int64_t v) {
  assert(type_ == PgElementType::kInt8);
  AddLength(8);
  Put64(bytes_, static_cast<std::uint64_t>(v));
}

void PgBinaryArray::AddInt4(std::int32_t v) {
  assert(type_ == PgElementType::kInt4);
  AddLength(4);
  Put32(bytes_, static_cast<std::uint32_t>(v));
}

void PgBinaryArray::AddTimestampTz(MicrosSinceEpoch micros) {
  assert(type_ == PgElementType::kTimestampTz);
  AddLength(8);
  Put64(bytes_, static_cast<std::uint64_t>(micros - kPgEpochMicros));
}

void PgBinaryArray::AddNull() {
  AddLength(-1);
  has_null_ = true;
}

std::string PgBinaryArray::Take() {
  std::string out;
  if (count_ == 0) {
    // An empty array has no dimensions: ndim 0, flags, element type.
    Put32(out, 0);
    Put32(out, 0);
    Put32(out, static_cast<std::uint32_t>(type_));
    return out;
  }
  assert(count_ <= static_cast<size_t>(std::numeric_limits<std::int32_t>::max()));
  Set32(bytes_, 0, 1);
  Set32(bytes_, 4, has_null_ ? 1 : 0);
  Set32(bytes_, 8, static_cast<std::uint32_t>(type_));
  Set32(bytes_, 12, static_cast<std::uint32_t>(count_));
  Set32(bytes_, 16, 1);
  out.swap(bytes_);
  bytes_.assign(kHeaderBytes, '\0');
  count_ = 0;
  has_null_ = false;
  return out;
}

}  // namespace msgx
