#include "stream/fold/sis_fold_decoder.h"

namespace msgx {
namespace {

class EnvelopeHolder final : public MessageDecoder::Pending {
 public:
  explicit EnvelopeHolder(sis::Envelope e) : envelope(std::move(e)) {}
  sis::Envelope envelope;
};

}  // namespace

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
