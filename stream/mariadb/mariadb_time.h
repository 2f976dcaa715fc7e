// MariaDbTimeColumn: one time column of the mailbox on MariaDB/MySQL, read
// and written as an instant whatever its type (docs/capture.md#mailbox-time).
//
// The session's time_zone is '+00:00' (MariaDbSession), and values travel as
// microseconds since '1970-01-01 00:00:00' (TIMESTAMPDIFF to read,
// TIMESTAMPADD to write). That reading is:
//   - for a TIMESTAMP column, the instant itself (the server converts to and
//     from the session zone, UTC): nothing to do;
//   - for a DATETIME column (no zone), the wall-clock reading as if it were
//     UTC: taken as a time in mailbox.time-zone, turned into an instant with
//     TimeZone::LocalToUtc on read and with the zone's offset at the instant
//     on write.
// Named server-side zones (SET time_zone = 'Asia/Shanghai') would need the
// server's mysql.time_zone tables, which the mailbox's owner may not load;
// this conversion needs nothing from the server but the column's type, read
// from information_schema.COLUMNS (visible with SELECT on the table).
//
// Thread-safety: one thread (with its session).
#pragma once

#include <optional>
#include <string>

#include "base/clock.h"
#include "base/result.h"
#include "codecs/time_zone.h"
#include "stream/mariadb/mariadb_session.h"

namespace msgx {

// A wall-clock reading in `zone` (microseconds since 1970-01-01T00:00 local)
// as an instant; a reading that occurs twice (DST ends) is the earlier
// instant, one in a DST gap moves forward by the gap (TimeZone::LocalToUtc).
MicrosSinceEpoch WallMicrosToUtc(MicrosSinceEpoch wall, const TimeZone& zone);
// The wall-clock reading in `zone` of an instant.
MicrosSinceEpoch UtcToWallMicros(MicrosSinceEpoch utc, const TimeZone& zone);

class MariaDbTimeColumn {
 public:
  // `table` may be schema-qualified ("db.t"); unqualified, DATABASE().
  MariaDbTimeColumn(std::string table, std::string column, TimeZone zone);

  // Reads the column's type; call on each new connection (OnConnect). A
  // column information_schema does not show (no such column, or no
  // privilege on it) is taken as DATETIME.
  Status Learn(MariaDbSession& session);

  // The instant of a TIMESTAMPDIFF reading of the column.
  MicrosSinceEpoch ToUtc(MicrosSinceEpoch reading) const;
  // The reading to write (with TIMESTAMPADD) for an instant.
  MicrosSinceEpoch FromUtc(MicrosSinceEpoch utc) const;

  // True when the column is a TIMESTAMP (an instant); nullopt before Learn.
  std::optional<bool> has_zone() const { return has_zone_; }

 private:
  const std::string table_;
  const std::string column_;
  const TimeZone zone_;
  std::optional<bool> has_zone_;
};

}  // namespace msgx
