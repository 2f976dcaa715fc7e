#include "stream/fold/sis_fold_decoder.h"

namespace msgx {
namespace {

class EnvelopeHolder final : public MessageDecoder::Pending {
 public:
  explicit EnvelopeHolder(sis::Envelope e) : envelope(std::move(e)) {}
  sis::Envelope envelope;
};

// A SisFoldDecoder that owns its SisDecoder.
class OwningSisFoldDecoder final : public MessageDecoder {
 public:
  OwningSisFoldDecoder(const TimeZone& zone, sis::DecoderOptions options)
      : sis_(zone, options), fold_(sis_) {}
  Result<sis::Meta> DecodeMeta(std::string_view raw,
                               std::unique_ptr<Pending>* pending) const override {
    return fold_.DecodeMeta(raw, pending);
  }
  Result<sis::DecodedMessage> DecodeBody(std::string_view raw,
                                         std::unique_ptr<Pending> pending) const override {
    return fold_.DecodeBody(raw, std::move(pending));
  }

 private:
  sis::SisDecoder sis_;
  SisFoldDecoder fold_;
};

}  // namespace

DecoderFactory SisDecoderFactory() {
  return [](const TimeZone& zone, std::int64_t max_bytes) -> std::unique_ptr<MessageDecoder> {
    sis::DecoderOptions o;
    o.max_bytes = max_bytes;
    return std::make_unique<OwningSisFoldDecoder>(zone, o);
  };
}

Result<sis::Meta> SisFoldDecoder::DecodeMeta(std::string_view raw,
                                             std::unique_ptr<Pending>* pending) const {
  auto env = decoder_.DecodeEnvelope(raw, sis::InputOrigin::kUnicodeText);
  if (!env.ok()) return env.status();
  sis::Meta meta = env->meta();
  *pending = std::make_unique<EnvelopeHolder>(std::move(*env));
  return meta;
}

Result<sis::DecodedMessage> SisFoldDecoder::DecodeBody(std::string_view raw,
                                                       std::unique_ptr<Pending> pending) const {
  auto* holder = dynamic_cast<EnvelopeHolder*>(pending.get());
  if (!holder) return decoder_.Decode(raw, sis::InputOrigin::kUnicodeText);
  return decoder_.DecodeBody(std::move(holder->envelope));
}

}  // namespace msgx
