// The body half of the SIS decoder (codecs/sis_decoder.h): a FLOP, SCHD/SCHS
// or reference body, from the parsed <MSG> element, into the typed model of
// codecs/sis_message.h. Times are parsed in the airport zone; a field that
// fails its format is MALFORMED with the field's path (docs/codec.md).
// Internal to codecs/.
//
// Thread-safety: pure functions over a parsed document.
#pragma once

#include <pugixml.hpp>
#include <string_view>

#include "base/status.h"
#include "codecs/sis_message.h"
#include "codecs/time_zone.h"

namespace msgx::sis {

// Decodes the body of `msg` (the <MSG> element) by meta.type and meta.styp
// into out->body.
// REQUIRES: IsSupported(meta.type, meta.styp).
Status DecodeBodyOf(pugi::xml_node msg, const TimeZone& zone, const Meta& meta,
                    DecodedMessage* out);

// Converts one element and its subtree into a generic Element with no time
// fields (META's extra elements). `parent` names the enclosing element.
Status ConvertElement(pugi::xml_node node, const TimeZone& zone, std::string_view parent,
                      Element* out);

}  // namespace msgx::sis
