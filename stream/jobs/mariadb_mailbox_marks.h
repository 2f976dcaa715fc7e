// MariaDbMailboxMarks: MailboxMarks on MariaDB/MySQL (InnoDB), through
// MariaDbSession (docs/jobs.md#processed-mark,
// docs/operations.md#running-against-mariadbmysql).
//
// One call is ONE transaction on its own read-write connection (not
// capture's read-only one), at READ COMMITTED:
//   SELECT id, processed, status … WHERE id IN (…) FOR UPDATE
//   UPDATE … SET processed = CASE id … END, status = ? WHERE id IN (the
//     rows found with processed NULL) AND processed IS NULL
//   COMMIT
// The locking read takes the asked rows' locks first, so what it found is
// what the update meets: the from-null rule holds against a concurrent
// marker (its mark committed first is found, not overwritten). A failure
// anywhere rolls the whole call back: nothing written, kInfra.
// Needs SELECT on the table and UPDATE of the two mark columns only.
//
// Times: the session's time_zone is '+00:00'; the processed time is
// written as TIMESTAMPADD(MICROSECOND, t, '1970-01-01') and read back with
// TIMESTAMPDIFF, t made by MariaDbTimeColumn (docs/capture.md#mailbox-time):
// a TIMESTAMP column receives the instant, a DATETIME column the wall-clock
// reading in `zone` (mailbox.time-zone). A mark written in the hour a DST
// change repeats reads back as the earlier of the two instants, so a re-run
// that finds it settles MARKED_ELSEWHERE, not MARKED
// (docs/jobs.md#the-settle-rule).
//
// Thread-safety: one thread.
#pragma once

#include <memory>
#include <string>

#include "base/config.h"
#include "codecs/time_zone.h"
#include "stream/jobs/mailbox_marks.h"
#include "stream/mariadb/mariadb_session.h"
#include "stream/mariadb/mariadb_time.h"

namespace msgx {

class MariaDbMailboxMarks final : public MailboxMarks {
 public:
  // `zone`: mailbox.time-zone, applied to a DATETIME processed column.
  MariaDbMailboxMarks(MariaDbUrl url, std::string table, MailboxColumns columns,
                      TimeZone zone = TimeZone::Fixed("UTC", 0));
  ~MariaDbMailboxMarks() override;

  Status MarkFromNull(std::span<const MarkRequest> rows, const std::string& status,
                      std::vector<MailboxMarkSeen>* out) override;

 private:
  const std::string table_;
  const MailboxColumns columns_;
  MariaDbSession session_;
  MariaDbTimeColumn processed_;
};

}  // namespace msgx
