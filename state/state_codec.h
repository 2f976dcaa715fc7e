// Encoding of fold state values to and from the flatbuffers of
// schemas/state.fbs. Encoding is canonical: the same value always gives the
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

std::string EncodeFlight(const Flight& f);
Result<Flight> DecodeFlight(std::string_view bytes);
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
