// Canonical JSON of a decoded SIS message (for `msgx decode --json`, golden
// files and logs).
//
// Canonical means deterministic: the same DecodedMessage always gives the
// same bytes. Keys come in a fixed, documented order (the order of the
// model's fields, see docs/codec.md), arrays keep document order, no
// whitespace. Value conventions keep the three states of a value apart
// (docs/codec.md#the-model):
//   TextField   null = missing, "" = empty, "x" = value
//   IntField    null = missing, "" = empty, 42 = value
//   TimeField   null = missing, "" = empty, else
//               {"raw":..,"state":"value","utc":"2003-12-15T10:05:00Z",
//                "utc_micros":..} or {"raw":..,"state":"value","minutes":..}
//               or {"raw":..,"state":"unparsable"}
//
// Pure; thread-safe.
#pragma once

#include <string>

#include "base/status.h"
#include "codecs/sis_message.h"

namespace msgx::sis {

std::string ToCanonicalJson(const DecodedMessage& message);

// {"class":"MALFORMED","error":"FLTR[3]/SODT: bad time ..."}
std::string ErrorToJson(const Status& status);

// "2003-12-15T10:05:00Z" (microseconds shown only when non-zero).
std::string FormatUtc(MicrosSinceEpoch micros);

}  // namespace msgx::sis
