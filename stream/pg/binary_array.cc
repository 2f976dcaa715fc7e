#include "stream/pg/binary_array.h"

#include <cassert>
#include <limits>

#include "base/big_endian.h"

namespace msgx {
namespace {

// ndim, flags, element OID, then one dimension's length and lower bound.
constexpr size_t kHeaderBytes = 20;
// 2000-01-01 00:00:00 UTC in microseconds since the Unix epoch.
constexpr MicrosSinceEpoch kPgEpochMicros = 946'684'800'000'000;

}  // namespace

PgBinaryArray::PgBinaryArray(PgElementType type) : type_(type), bytes_(kHeaderBytes, '\0') {}

void PgBinaryArray::AddLength(std::int32_t n) {
  AppendBigEndian32(&bytes_, static_cast<std::uint32_t>(n));
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
  AppendBigEndian64(&bytes_, static_cast<std::uint64_t>(v));
}

void PgBinaryArray::AddInt4(std::int32_t v) {
  assert(type_ == PgElementType::kInt4);
  AddLength(4);
  AppendBigEndian32(&bytes_, static_cast<std::uint32_t>(v));
}

void PgBinaryArray::AddTimestampTz(MicrosSinceEpoch micros) {
  assert(type_ == PgElementType::kTimestampTz);
  AddLength(8);
  AppendBigEndian64(&bytes_, static_cast<std::uint64_t>(micros - kPgEpochMicros));
}

void PgBinaryArray::AddNull() {
  AddLength(-1);
  has_null_ = true;
}

std::string PgBinaryArray::Take() {
  std::string out;
  if (count_ == 0) {
    // An empty array has no dimensions: ndim 0, flags, element type.
    AppendBigEndian32(&out, 0);
    AppendBigEndian32(&out, 0);
    AppendBigEndian32(&out, static_cast<std::uint32_t>(type_));
    return out;
  }
  assert(count_ <= static_cast<size_t>(std::numeric_limits<std::int32_t>::max()));
  StoreBigEndian32(&bytes_, 0, 1);
  StoreBigEndian32(&bytes_, 4, has_null_ ? 1 : 0);
  StoreBigEndian32(&bytes_, 8, static_cast<std::uint32_t>(type_));
  StoreBigEndian32(&bytes_, 12, static_cast<std::uint32_t>(count_));
  StoreBigEndian32(&bytes_, 16, 1);
  out.swap(bytes_);
  bytes_.assign(kHeaderBytes, '\0');
  count_ = 0;
  has_null_ = false;
  return out;
}

}  // namespace msgx
