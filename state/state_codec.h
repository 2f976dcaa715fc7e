// Encoding of fold state values to and from the flatbuffers of
// schemas/state.fbs, except flights, which are written in a compact form of
// their own (state/compact_flight.h). Encoding is canonical: the same value always gives the
// same bytes (fields and lists are emitted in map order). Decoding verifies
// the buffer first; a buffer that does not verify is kInternal (the state
// store is corrupt: rebuild it from the log).
//
// Thread-safety: free functions, no shared state.
#pragma once

#include <string>
#include <string_view>

#include "base/result.h"
#include "state/flight.h"
#include "state/outcome.h"

namespace msgx {

// Flights are written in the compact form (state/compact_flight.h); both it
// and the flatbuffer fbstate.Flight of stores written before it decode.
std::string EncodeFlight(const Flight& f);
Result<Flight> DecodeFlight(std::string_view bytes);
// The flatbuffer form msgx wrote before the compact one; tests only (a store
// that holds both).
std::string EncodeFlatbufferFlight(const Flight& f);
// True when both are stored flights, in either form, of the same flight:
// a store that still holds flights in the older form is no different from
// one rewritten since (`msgx refold --verify` compares stores entry by entry).
bool SameStoredFlight(std::string_view a, std::string_view b);
// The SODT of a stored flight (nullopt when it has no time SODT), without
// decoding the rest.
Result<std::optional<MicrosSinceEpoch>> StoredFlightSodt(std::string_view bytes);

std::string EncodeReference(const ReferenceRecord& r);
Result<ReferenceRecord> DecodeReference(std::string_view bytes);

std::string EncodeOutcome(const Outcome& o);
Result<Outcome> DecodeOutcome(std::string_view bytes);

std::string EncodeBinding(const IdentityBinding& b);
Result<IdentityBinding> DecodeBinding(std::string_view bytes);

std::string EncodeSender(const SenderSeqn& s);
Result<SenderSeqn> DecodeSender(std::string_view bytes);

}  // namespace msgx
