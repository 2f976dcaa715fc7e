// SisFoldDecoder: the fold's MessageDecoder over the real SIS decoder
// (codecs/sis_decoder.h). META and body are decoded from one parse: the
// Envelope of step 1 is carried to step 2. Log records hold text read from
// the mailbox's text column, so the input origin is kUnicodeText
// (docs/codec.md#encoding-rules).
//
// Thread-safety: immutable; the decoder it wraps must outlive it.
#pragma once

#include "codecs/sis_decoder.h"
#include "state/airport_zone.h"
#include "stream/fold/fold_input.h"

namespace msgx {

class SisFoldDecoder final : public MessageDecoder {
 public:
  explicit SisFoldDecoder(const sis::SisDecoder& decoder) : decoder_(decoder) {}
  Result<sis::Meta> DecodeMeta(std::string_view raw,
                               std::unique_ptr<Pending>* pending) const override;
  Result<sis::DecodedMessage> DecodeBody(std::string_view raw,
                                         std::unique_ptr<Pending> pending) const override;

 private:
  const sis::SisDecoder& decoder_;
};

// The real DecoderFactory: a SisDecoder over the zone with codec.max-bytes,
// as the fold's MessageDecoder.
DecoderFactory SisDecoderFactory();

// The codec's TZif zone as the fold's AirportZone.
class TimeZoneAirportZone final : public AirportZone {
 public:
  explicit TimeZoneAirportZone(const TimeZone& zone) : zone_(zone) {}
  std::int32_t OffsetSecondsAt(std::int64_t utc_seconds) const override {
    return zone_.OffsetAt(utc_seconds);
  }

 private:
  const TimeZone& zone_;
};

}  // namespace msgx
