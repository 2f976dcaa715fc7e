#include "stream/fold/decoded_ahead.h"

#include <utility>

#include "stream/fold/identity.h"

namespace msgx {

std::shared_ptr<const DecodedAhead> DecodeAhead(std::shared_ptr<const ActiveSettings> settings,
                                                std::string_view raw) {
  auto out = std::make_shared<DecodedAhead>();
  const MessageDecoder& decoder = settings->decoder();
  std::unique_ptr<MessageDecoder::Pending> pending;
  const Result<sis::Meta>& meta = out->meta.emplace(decoder.DecodeMeta(raw, &pending));
  // The fold's order: an ignored message's body is never looked at.
  if (meta.ok() && !settings->ignore().Match(meta->type, meta->styp)) {
    const auto& body = out->body.emplace(decoder.DecodeBody(raw, std::move(pending)));
    if (body.ok()) out->body_hash = BodyHash(raw);
  }
  out->settings = std::move(settings);
  return out;
}

}  // namespace msgx
