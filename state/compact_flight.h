// The compact stored form of a flight: what the state store writes under
// `flights` (docs/fold.md#stored-flights). A fold batch rewrites every
// flight it changed, so the size of this form is bytes in RocksDB's WAL and
// memtable per batch; it is about 40% of the flatbuffer (schemas/state.fbs
// fbstate.Flight) that stores written before it hold, which are still read
// (state/state_codec.h tells the two apart).
//
// Layout (varint: LEB128, 7 bits a byte, low first; zigzag for signed):
//   magic     FF 4D 46 01 ("\xFF" "MF" version 1): as a flatbuffer's root
//             offset it would point 21 MB into the buffer, past the end of
//             any stored flight, so no flatbuffer starts with it
//   version   zigzag varint
//   flid      string
//   fields    varint count, then each field
//   lists     varint count, then each: name string, varint entry count,
//             each entry: varint field count, then each field
//   field     name string, kind byte (Value::Kind), then
//             text: string; int, time: zigzag varint; null: nothing
//   string    varint length, bytes
// Fields and lists are written in their SortedMap order, so encoding is
// canonical: the same flight always gives the same bytes.
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "state/flight.h"

namespace msgx {

// True when `bytes` start with the compact form's magic.
bool IsCompactFlight(std::string_view bytes);

std::string EncodeCompactFlight(const Flight& f);

// kInternal when the bytes are not a whole, well-formed compact flight
// (truncated, a length past the end, an unknown kind, trailing bytes).
Result<Flight> DecodeCompactFlight(std::string_view bytes);

// The flight's time SODT (nullopt: none, or not a time), reading only the
// fields up to it.
Result<std::optional<MicrosSinceEpoch>> CompactFlightSodt(std::string_view bytes);

}  // namespace msgx
