// ActiveSettings: the decision settings in force, ready to decide with — the
// ignore rules parsed, the airport zone built from the TZif bytes the log
// carries, and a decoder for that zone (docs/fold.md#settings-in-the-log).
//
// The fold holds one and replaces it at each SETTINGS record, so a record is
// always decided with the settings in force at its offset.
//
// Thread-safety: immutable after Make(); the fold's thread.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "codecs/ignore_rules.h"
#include "codecs/time_zone.h"
#include "state/airport_zone.h"
#include "state/decision_settings.h"
#include "stream/fold/fold_input.h"
#include "stream/fold/sis_fold_decoder.h"

namespace msgx {

class ActiveSettings {
 public:
  // `since`: the offset of their SETTINGS record, -1 when the log holds none.
  // Without TZif bytes the zone is `fallback_zone`; without a factory the
  // decoder is `fallback_decoder` (tests decode with a fake under every
  // setting). kConfig when the ignore rules or the TZif bytes do not parse,
  // or a fallback that is needed is null.
  static Result<std::unique_ptr<ActiveSettings>> Make(DecisionSettings settings, std::int64_t since,
                                                      const DecoderFactory& make_decoder,
                                                      const MessageDecoder* fallback_decoder,
                                                      const AirportZone* fallback_zone);
  ActiveSettings(const ActiveSettings&) = delete;
  ActiveSettings& operator=(const ActiveSettings&) = delete;

  const DecisionSettings& values() const { return values_; }
  std::int64_t since() const { return since_; }
  const sis::IgnoreRules& ignore() const { return *ignore_; }
  const AirportZone& zone() const { return *zone_; }
  const MessageDecoder& decoder() const { return *decoder_; }

 private:
  ActiveSettings() = default;

  DecisionSettings values_;
  std::int64_t since_ = -1;
  std::optional<sis::IgnoreRules> ignore_;
  std::optional<TimeZone> tz_;                     // from the TZif bytes
  std::unique_ptr<TimeZoneAirportZone> tz_zone_;   // over tz_
  std::unique_ptr<MessageDecoder> owned_decoder_;  // over tz_
  const AirportZone* zone_ = nullptr;
  const MessageDecoder* decoder_ = nullptr;
};

}  // namespace msgx
