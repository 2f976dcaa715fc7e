// A one-dimensional PostgreSQL array in the binary wire format, built one
// element at a time and sent as one binary parameter
// (docs/schema.md#how-the-applier-sends-rows).
//
// Why binary: the applier inserts proc_state and msg_event rows from
// unnest() over one array parameter per column. Sent as text, each array is
// escaped here (every `"` and `\` of a JSON payload) and parsed back by the
// server's array_in, character by character, in two passes; that parse was
// about a third of the event insert's time
// (docs/performance.md#arrays-sent-in-binary). In binary each element is a
// length and its bytes: nothing is escaped, and the server checks the text's
// encoding and copies it.
//
// The format is array_send's (PostgreSQL's src/backend/utils/adt/arrayfuncs.c),
// every integer big-endian:
//   int32 ndim (1; 0 for an empty array, which then has no dimension)
//   int32 flags (1 when an element is NULL)
//   uint32 element type OID
//   int32 dimension length, int32 lower bound (1)
//   per element: int32 byte length (-1 for NULL), then the bytes.
// Element values, by type:
//   text        the bytes, in the connection's client encoding as a text
//               parameter's would be (the server checks and converts them);
//   int4, int8  big-endian two's complement;
//   timestamptz int64 microseconds since 2000-01-01 00:00:00 UTC.
// The statement must name the parameter's type (`$1::text[]`): the server
// rejects an array whose element OID is not the one it expects.
//
// Thread-safety: none; one builder per column of one statement.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/clock.h"

namespace msgx {

// Element types by their OIDs, fixed in pg_type since PostgreSQL 7.
enum class PgElementType : std::uint32_t {
  kInt8 = 20,
  kInt4 = 23,
  kText = 25,
  kTimestampTz = 1184,
};

class PgBinaryArray {
 public:
  explicit PgBinaryArray(PgElementType type);

  // Each Add must match the array's element type (checked by assert).
  void AddText(std::string_view v);
  void AddInt8(std::int64_t v);
  void AddInt4(std::int32_t v);
  void AddTimestampTz(MicrosSinceEpoch micros);
  void AddNull();

  size_t size() const { return count_; }
  // The bytes so far, header included.
  size_t Bytes() const { return bytes_.size(); }

  // The whole array in the format above; the builder is empty afterwards.
  std::string Take();

 private:
  void AddLength(std::int32_t n);

  PgElementType type_;
  std::string bytes_;  // kHeaderBytes reserved, then the elements
  size_t count_ = 0;
  bool has_null_ = false;
};

}  // namespace msgx
