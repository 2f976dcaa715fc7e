#include "stream/mariadb/mariadb_time.h"

#include <utility>

namespace msgx {
namespace {

constexpr std::int64_t kMicros = 1'000'000;

std::int64_t FloorDiv(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

}  // namespace

MicrosSinceEpoch WallMicrosToUtc(MicrosSinceEpoch wall, const TimeZone& zone) {
  const std::int64_t seconds = FloorDiv(wall, kMicros);
  return zone.LocalToUtc(seconds) * kMicros + (wall - seconds * kMicros);
}

MicrosSinceEpoch UtcToWallMicros(MicrosSinceEpoch utc, const TimeZone& zone) {
  return utc + static_cast<std::int64_t>(zone.OffsetAt(FloorDiv(utc, kMicros))) * kMicros;
}

MariaDbTimeColumn::MariaDbTimeColumn(std::string table, std::string column, TimeZone zone)
    : table_(std::move(table)), column_(std::move(column)), zone_(std::move(zone)) {}

Status MariaDbTimeColumn::Learn(MariaDbSession& session) {
  const std::size_t dot = table_.find('.');
  const std::string schema =
      dot == std::string::npos ? "DATABASE()" : MariaDbSession::Quote(table_.substr(0, dot));
  const std::string name = dot == std::string::npos ? table_ : table_.substr(dot + 1);
  std::vector<MariaDbRow> rows;
  Status s = session.Run("time column",
                         "SELECT LOWER(DATA_TYPE) FROM information_schema.COLUMNS WHERE "
                         "TABLE_SCHEMA = " +
                             schema + " AND TABLE_NAME = " + MariaDbSession::Quote(name) +
                             " AND COLUMN_NAME = " + MariaDbSession::Quote(column_),
                         &rows);
  if (!s.ok()) return s;
  has_zone_ = !rows.empty() && rows[0].at(0) && *rows[0][0] == "timestamp";
  return Status::Ok();
}

MicrosSinceEpoch MariaDbTimeColumn::ToUtc(MicrosSinceEpoch reading) const {
  return has_zone_.value_or(false) ? reading : WallMicrosToUtc(reading, zone_);
}

MicrosSinceEpoch MariaDbTimeColumn::FromUtc(MicrosSinceEpoch utc) const {
  return has_zone_.value_or(false) ? utc : UtcToWallMicros(utc, zone_);
}

}  // namespace msgx
