// DailySweep: the scheduled history sweep and identity expiry
// (docs/jobs.md#history-sweep). Once per airport day, at `at_minutes` after
// the start of that day (history.sweep-at, 03:30 by default), it appends one
// HISTORY_SWEEP and one IDENTITY_EXPIRY command to the log in one synced
// batch; the fold then does what those commands do
// (docs/fold.md#history-sweep, docs/fold.md#identity-expiry).
//
// The commands are a function of the day and the decision settings alone,
// never of when they are appended: they carry explicit limits, computed from
// the day's run instant (cutoff: the start of the day less history.keep-days;
// before: the run instant less identity.window, the limits the fold would
// take from the same settings at that instant), and that instant as their
// issued_at. So the same day's commands appended again by a later process
// (after `msgx restore` of a backup taken before they were appended) fold to
// the same decisions and the same chained digest as the first ones
// (docs/operations.md#backup-and-restore); limits left 0 would be taken from
// the append time, which differs.
//
// Once per day, across restarts and leader changes: the two commands carry
// the command ids DaySweepId(day) and DayExpiryId(day) (negative, so never a
// msgx_command id), which the log store indexes in the same batch
// (LogStore::CommandOffset); Step() appends only when the day's sweep id is
// not in the log. A day on which no process led at all is not made up
// later: a process that starts after the time appends the current day's.
//
// The time of day is counted from the start of the airport day, so on a day
// whose UTC offset changes before it, the run is an hour off local 03:30.
//
// Thread-safety: one thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "base/clock.h"
#include "base/result.h"
#include "state/airport_zone.h"
#include "state/decision_settings.h"
#include "state/log_store.h"

namespace msgx {

// "HH:MM" as minutes after midnight; kConfig when malformed.
Result<int> ParseTimeOfDay(std::string_view hh_mm);

// The run of the airport day that contains `now`: that day (yyyymmdd) and
// the instant of its run.
struct DailyRun {
  std::int64_t day = 0;
  MicrosSinceEpoch at = 0;
};
DailyRun DailyRunOf(MicrosSinceEpoch now, const AirportZone& zone, int at_minutes);

// The command ids of one day's commands.
std::int64_t DaySweepId(std::int64_t day);
std::int64_t DayExpiryId(std::int64_t day);

struct DailySweepStep {
  bool appended = false;         // this step appended the day's commands
  std::int64_t day = 0;          // the airport day looked at
  MicrosSinceEpoch next_at = 0;  // when a step is next due
};

class DailySweep {
 public:
  // The limits come from `settings` (history_keep_days, identity_window):
  // those the process records in the log as in force.
  // REQUIRES: log, zone and clock outlive the job.
  DailySweep(LogStore* log, const AirportZone* zone, const Clock* clock, int at_minutes,
             const DecisionSettings& settings);

  // Appends the current day's commands when its time has come and they are
  // not in the log yet. kInfra when the log cannot be read or written.
  Result<DailySweepStep> Step();

 private:
  LogStore* log_;
  const AirportZone* zone_;
  const Clock* clock_;
  int at_minutes_;
  int keep_days_;
  Millis identity_window_;
};

}  // namespace msgx
