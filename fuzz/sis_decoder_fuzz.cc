// libFuzzer target for the SIS decoder: any bytes, both input origins, split
// and whole decode, canonical JSON and the FlatBuffers round trip of
// whatever decodes. A crash, a
// sanitizer report, a leak or an uncaught exception is a bug; every input
// must end in a value or a classified Status.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "codecs/identity_key.h"
#include "codecs/sis_decoder.h"
#include "codecs/sis_flatbuffer.h"
#include "codecs/sis_json.h"

namespace {

const msgx::TimeZone& Zone() {
  static const msgx::TimeZone* zone = [] {
    auto z = msgx::TimeZone::Load("Asia/Shanghai");
    if (!z.ok()) std::abort();  // the fuzz host needs tzdata
    return new msgx::TimeZone(std::move(z).value());
  }();
  return *zone;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  msgx::sis::DecoderOptions options;
  options.max_bytes = 1 << 20;
  const msgx::sis::SisDecoder decoder(Zone(), options);
  for (auto origin : {msgx::sis::InputOrigin::kUnicodeText, msgx::sis::InputOrigin::kRawBytes}) {
    auto env = decoder.DecodeEnvelope(input, origin);
    if (!env.ok()) {
      if (env.status().error_class() == msgx::ErrorClass::kInternal) std::abort();
      continue;
    }
    (void)msgx::sis::MetaIdentityKey(env->meta(), true);
    auto msg = decoder.DecodeBody(std::move(env).value());
    if (msg.ok()) {
      const std::string json = msgx::sis::ToCanonicalJson(*msg);
      // The cache form must round-trip whatever decodes.
      auto back = msgx::sis::FromFlatbuffer(msgx::sis::ToFlatbuffer(*msg));
      if (!back.ok() || msgx::sis::ToCanonicalJson(*back) != json) std::abort();
    } else if (msg.status().error_class() == msgx::ErrorClass::kInternal) {
      std::abort();
    }
  }
  return 0;
}
