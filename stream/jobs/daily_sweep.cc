#include "stream/jobs/daily_sweep.h"

#include <string>
#include <vector>

namespace msgx {
namespace {

constexpr MicrosSinceEpoch kMinute = 60'000'000;
constexpr MicrosSinceEpoch kHour = 60 * kMinute;

}  // namespace

Result<int> ParseTimeOfDay(std::string_view s) {
  auto digit = [&](std::size_t i) { return s[i] >= '0' && s[i] <= '9'; };
  if (s.size() != 5 || s[2] != ':' || !digit(0) || !digit(1) || !digit(3) || !digit(4)) {
    return Status::Config("time of day \"" + std::string(s) + "\" is not HH:MM");
  }
  const int h = (s[0] - '0') * 10 + (s[1] - '0');
  const int m = (s[3] - '0') * 10 + (s[4] - '0');
  if (h > 23 || m > 59)
    return Status::Config("time of day \"" + std::string(s) + "\" is not HH:MM");
  return h * 60 + m;
}

DailyRun DailyRunOf(MicrosSinceEpoch now, const AirportZone& zone, int at_minutes) {
  const MicrosSinceEpoch start = StartOfAirportDay(now, zone);
  return {std::stoll(AirportDate(now, zone)), start + at_minutes * kMinute};
}

std::int64_t DaySweepId(std::int64_t day) { return -(day * 10 + 1); }
std::int64_t DayExpiryId(std::int64_t day) { return -(day * 10 + 2); }

DailySweep::DailySweep(LogStore* log, const AirportZone* zone, const Clock* clock, int at_minutes,
                       const DecisionSettings& settings)
    : log_(log),
      zone_(zone),
      clock_(clock),
      at_minutes_(at_minutes),
      keep_days_(settings.history_keep_days),
      identity_window_(settings.identity_window) {}

Result<DailySweepStep> DailySweep::Step() {
  const MicrosSinceEpoch now = clock_->NowMicros();
  const DailyRun today = DailyRunOf(now, *zone_, at_minutes_);
  DailySweepStep out;
  out.day = today.day;
  if (now < today.at) {
    out.next_at = today.at;
    return out;
  }
  // Tomorrow's run: an instant well inside tomorrow, whatever its length.
  out.next_at = DailyRunOf(StartOfAirportDay(now, *zone_) + 30 * kHour, *zone_, at_minutes_).at;
  auto done = log_->CommandOffset(DaySweepId(today.day));
  if (!done.ok()) return done.status();
  if (done->has_value()) return out;
  const std::string by = "msgx:jobs:sweep-at";
  const HistorySweepArgs sweep{StartOfAirportDay(today.at, *zone_) -
                               static_cast<MicrosSinceEpoch>(keep_days_) * 24 * kHour};
  const IdentityExpiryArgs expiry{today.at - identity_window_.count() * 1000};
  std::vector<LogRecordData> records{
      LogRecordData::Command(CommandData{sweep, by, DaySweepId(today.day), today.at}),
      LogRecordData::Command(CommandData{expiry, by, DayExpiryId(today.day), today.at})};
  auto appended = log_->AppendCommands(records);
  if (!appended.ok()) return appended.status();
  out.appended = true;
  return out;
}

}  // namespace msgx
