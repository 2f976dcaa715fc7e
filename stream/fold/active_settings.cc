#include "stream/fold/active_settings.h"

namespace msgx {

Result<std::unique_ptr<ActiveSettings>> ActiveSettings::Make(DecisionSettings settings,
                                                             std::int64_t since,
                                                             const DecoderFactory& make_decoder,
                                                             const MessageDecoder* fallback_decoder,
                                                             const AirportZone* fallback_zone) {
  std::unique_ptr<ActiveSettings> a(new ActiveSettings());
  auto rules = sis::IgnoreRules::Parse(settings.ignore_rules);
  if (!rules.ok()) return rules.status();
  a->ignore_ = std::move(*rules);
  if (!settings.zone_tzif.empty()) {
    auto tz = TimeZone::FromTzif(settings.zone_name, settings.zone_tzif);
    if (!tz.ok()) return tz.status();
    a->tz_.emplace(std::move(*tz));
    a->tz_zone_ = std::make_unique<TimeZoneAirportZone>(*a->tz_);
    a->zone_ = a->tz_zone_.get();
  } else {
    a->zone_ = fallback_zone;
  }
  if (make_decoder) {
    if (!a->tz_)
      return Status::Config("settings: a decoder needs the zone's rules (no TZif bytes)");
    a->owned_decoder_ = make_decoder(*a->tz_, settings.codec_max_bytes);
    a->decoder_ = a->owned_decoder_.get();
  } else {
    a->decoder_ = fallback_decoder;
  }
  if (a->zone_ == nullptr || a->decoder_ == nullptr) {
    return Status::Config("settings: no zone or no decoder to decide with");
  }
  a->values_ = std::move(settings);
  a->since_ = since;
  return a;
}

}  // namespace msgx
