// XML helpers of the SIS decoder (codecs/sis_decoder.cc and
// codecs/sis_body_decoder.cc): text, paths for error messages, integer and
// depth checks over pugixml nodes. Internal to codecs/.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <pugixml.hpp>
#include <string>
#include <string_view>

#include "base/status.h"

namespace msgx::sis::xml {

using pugi::xml_node;

// XML white space (space, tab, CR, LF).
bool IsSpace(char c);

// `s` without leading and trailing XML white space.
std::string_view Trim(std::string_view s);

// ASCII upper case; other bytes unchanged.
std::string Upper(std::string_view s);

// True for character data (PCDATA or CDATA).
bool IsData(const xml_node& n);

// The element's own character data, trimmed.
std::string TextOf(const xml_node& node);

// TextOf(node) for a caller that has already walked node's children:
// `first_data` is its first data child and `data_count` how many it has.
// The children are walked again only when the text comes in pieces.
std::string TextOfData(const xml_node& node, const xml_node& first_data, int data_count);

// True when `name` is a record of a `msg_type` body (FLOP, FLTR, or the
// reference type's own name).
bool IsRecordName(std::string_view name, std::string_view msg_type);

// "FLOP[1]/GTDT[2]/PGOT": the path below MSG (SCHD/SCHS containers left
// out). Records always carry their 1-based index; other elements only when
// they have siblings of the same name. Only built on error paths.
std::string PathOf(xml_node node, std::string_view msg_type);

// Same for an attribute: "FLOP[1]/DELY[2]@STRT".
std::string AttrPath(xml_node node, std::string_view attr, std::string_view msg_type);

// `raw` in double quotes for an error message, cut to a readable length.
std::string Quoted(std::string_view raw);

// A decimal integer, optionally signed, with nothing else around it.
bool ParseInt(std::string_view s, std::int64_t* out);

// The number of UTF-8 code points in `s` (valid UTF-8 assumed).
std::size_t CodePoints(std::string_view s);

// Iterative depth check over the whole document (no recursion, no stack).
bool DepthWithin(const pugi::xml_document& doc, int max_depth);

// The number of '<' in `text` that are not followed by '/': every start tag,
// and every comment, processing instruction, CDATA section and DOCTYPE. A
// node of the tree pugixml parses from `text` at depth d (the root element
// at 1) has d - 1 elements above it, each begun by one of those, so no node
// is deeper than this count plus one. When that is within the limit, the
// walk of DepthWithin is not needed: a message of SIS size has about 30 start
// tags (docs/codec.md#encoding-rules). Stops counting at `stop_at`, so a
// large message costs a scan of its first few hundred bytes.
std::size_t StartTagBound(std::string_view text, std::size_t stop_at);

// pugixml turns character references into UTF-8 without checking the code
// point, and its strings end at NUL. So &#0;, surrogates and code points over
// U+10FFFF are refused up front: the decoded text stays valid UTF-8 and is
// never silently cut. (A reference inside CDATA or a comment is refused too;
// SIS never has one there.)
Status CheckCharRefs(std::string_view s);

}  // namespace msgx::sis::xml
