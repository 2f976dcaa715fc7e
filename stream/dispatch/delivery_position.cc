#include "stream/dispatch/delivery_position.h"

#include <charconv>
#include <vector>

namespace msgx {
namespace {

// A decimal integer filling all of `s` (a leading '-' allowed), or nothing.
std::optional<std::int64_t> Integer(std::string_view s) {
  std::int64_t v = 0;
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, v);
  if (s.empty() || ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

// The last `n` ':'-separated fields of `s`, or fewer when `s` has fewer.
std::vector<std::string_view> LastFields(std::string_view s, size_t n) {
  std::vector<std::string_view> out;
  while (out.size() < n) {
    const size_t colon = s.rfind(':');
    if (colon == std::string_view::npos) {
      out.insert(out.begin(), s);
      break;
    }
    out.insert(out.begin(), s.substr(colon + 1));
    s = s.substr(0, colon);
  }
  return out;
}

}  // namespace

Result<DeliveryPosition> PositionOfEvent(std::int64_t state_version, std::string_view event_key) {
  // "<offset>:<sub>:<position>": the offset is the state_version column.
  const std::vector<std::string_view> f = LastFields(event_key, 3);
  const auto sub = f.size() == 3 ? Integer(f[1]) : std::nullopt;
  const auto position = f.size() == 3 ? Integer(f[2]) : std::nullopt;
  if (!sub || !position || *sub < 0 || *position < 0) {
    return Status::Internal("event_key \"" + std::string(event_key) +
                            "\" does not end in :<sub>:<position>");
  }
  return DeliveryPosition{state_version, *sub, *position};
}

std::string EncodeProgress(const DeliveryPosition& p) {
  return std::to_string(p.state_version) + ":" + std::to_string(p.sub) + ":" +
         std::to_string(p.position);
}

Result<DeliveryPosition> DecodeProgress(std::string_view value) {
  const std::vector<std::string_view> f = LastFields(value, 4);
  if (f.size() == 3) {
    const auto v = Integer(f[0]);
    const auto sub = Integer(f[1]);
    const auto position = Integer(f[2]);
    if (v && sub && position) return DeliveryPosition{*v, *sub, *position};
  }
  return Status::Protocol("progress record \"" + std::string(value).substr(0, 80) +
                          "\" is not <state_version>:<sub>:<position>");
}

}  // namespace msgx
