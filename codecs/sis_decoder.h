// SisDecoder: raw mailbox text → sis::DecodedMessage, or a classified error
// (docs/codec.md#error-classes). No I/O.
//
// Decoding is split in two so that ignore rules (codecs/ignore_rules.h) can
// be applied between them (docs/codec.md#ignore-rules: an ignored type with
// a broken body is still SKIPPED):
//
//   Result<Envelope> env = decoder.DecodeEnvelope(text, origin);  // XML + META
//   if (rules.Match(env->meta())) → SKIPPED
//   Result<DecodedMessage> msg = decoder.DecodeBody(std::move(*env));
//
// Decode() does both.
//
// Error classes (Status::error_class()):
//   kCodecError   input over options.max_bytes; an encoding iconv cannot
//                 transcode; an internal failure (e.g. out of memory).
//   kMalformed    not well-formed XML, a DOCTYPE, nesting over
//                 options.max_depth, invalid bytes for the encoding, root not
//                 MSG, no META, META/SNDR SEQN DTTM TYPE STYP missing or
//                 empty, a bad DTTM, a FLOP record or SCHD FLTR without
//                 FLID, a reference record without its key, a value of the
//                 wrong shape (bad time outside the "reject" STYPs, non-integer
//                 MAXP/HNAG/RECS, FLIN/FLTY longer than one character, a
//                 single-valued payload element given twice), RECS missing
//                 in a snapshot, no record at all in a FLOP message.
//   kProtocol     a snapshot (DNLD/RESP) whose RECS differs from the number
//                 of records it carries.
//   kUnsupported  (DecodeBody only) well-formed, but TYPE/STYP has no handler.
// Messages name the element and record index, e.g.
//   FLTR[3]/SODT: bad time "32JAN210535" (expected ddMMMyyHHmm)
//
// Bounded: input size is checked before anything else; the XML is parsed
// iteratively by pugixml, its depth checked iteratively, and only then are
// trees converted (recursively, at most max_depth deep). DTD entities are
// never expanded (pugixml has no DTD support; a DOCTYPE is refused).
// No exception escapes.
//
// Thread-safety: a SisDecoder is immutable; Decode* may run concurrently.
// An Envelope is a value owned by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>

#include "base/result.h"
#include "codecs/sis_message.h"
#include "codecs/time_zone.h"
#include "codecs/transcode.h"

namespace msgx::sis {

struct DecoderOptions {
  std::int64_t max_bytes = 16LL * 1024 * 1024;  // codec.max-bytes
  int max_depth = 32;                           // SIS needs 5
};

// A parsed document whose META is decoded and whose body is not yet.
// Move-only; holds the UTF-8 text and the pugixml tree.
class Envelope {
 public:
  Envelope(Envelope&&) noexcept;
  Envelope& operator=(Envelope&&) noexcept;
  ~Envelope();

  const Meta& meta() const { return meta_; }

 private:
  friend class SisDecoder;
  struct Doc;
  Envelope();

  Meta meta_;
  std::unique_ptr<Doc> doc_;
};

class SisDecoder {
 public:
  // REQUIRES: `zone` outlives the decoder.
  explicit SisDecoder(const TimeZone& zone, DecoderOptions options = {});

  // Size and encoding checks, XML parse, META decode.
  Result<Envelope> DecodeEnvelope(std::string_view input, InputOrigin origin,
                                  std::string_view encoding_override = {}) const;
  // UNSUPPORTED check and body decode.
  Result<DecodedMessage> DecodeBody(Envelope envelope) const;
  // Both.
  Result<DecodedMessage> Decode(std::string_view input, InputOrigin origin,
                                std::string_view encoding_override = {}) const;

  const TimeZone& zone() const { return *zone_; }
  const DecoderOptions& options() const { return options_; }

 private:
  const TimeZone* zone_;
  DecoderOptions options_;
};

}  // namespace msgx::sis
