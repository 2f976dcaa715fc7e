#include "stream/fold/identity.h"

#include "codecs/identity_key.h"
#include "state/digest.h"

namespace msgx {

EpochStep NextEpoch(const std::optional<SenderSeqn>& tracker, std::int64_t seqn) {
  if (!tracker) return {0, SenderSeqn{seqn, 0}};
  const std::int64_t half = kSeqnRange / 2;
  if (seqn < tracker->last_seqn - half) {
    return {tracker->epoch + 1, SenderSeqn{seqn, tracker->epoch + 1}};
  }
  if (seqn > tracker->last_seqn + half && tracker->epoch > 0) {
    return {tracker->epoch - 1, std::nullopt};
  }
  if (seqn == tracker->last_seqn) return {tracker->epoch, std::nullopt};
  return {tracker->epoch, SenderSeqn{seqn, tracker->epoch}};
}

std::string EpochIdentityKey(const sis::Meta& meta, bool include_day_boundary, std::int32_t epoch) {
  std::string key = sis::MetaIdentityKey(meta, include_day_boundary);
  if (epoch > 0) key += "#e" + std::to_string(epoch);
  return sis::BoundKey(key, kMaxIdentityKey);
}

std::string BodyHash(std::string_view raw) {
  const std::size_t a = raw.find("<META");
  const std::size_t b = raw.find("</META>");
  if (a == std::string_view::npos || b == std::string_view::npos || b < a) return Sha256(raw);
  std::string body(raw.substr(0, a));
  body.append(raw.substr(b + 7));
  return Sha256(body);
}

}  // namespace msgx
