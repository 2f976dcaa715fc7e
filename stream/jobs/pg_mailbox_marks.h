// PgMailboxMarks: MailboxMarks on PostgreSQL, through libpqxx
// (docs/jobs.md#processed-mark).
//
// One call is ONE statement on its own connection (not capture's read-only
// one): an UPDATE … FROM unnest(ids, times) … WHERE id = want.id AND
// processed IS NULL RETURNING id, joined with a read of the asked rows in
// the same statement's snapshot, so what was found is what was there when
// the update looked. Under READ COMMITTED a row that someone marks while the
// update waits for its lock is re-checked and left alone, so the from-null
// rule holds against concurrent writers.
//
// Times: the session runs with TimeZone = `time_zone` (mailbox.time-zone,
// docs/capture.md#mailbox-time), so a TIMESTAMP (without time zone)
// processed column receives the instant's wall-clock reading in that zone,
// and is read back as that reading taken in it (as PgMailbox reads the
// received column); a TIMESTAMPTZ column receives the instant. A mark
// written in the hour a DST change repeats reads back as PostgreSQL's
// choice of the two instants, which may not be msgx's.
// A processed column coarser than microseconds would round msgx's time,
// and its own mark found by a re-run would then settle MARKED_ELSEWHERE
// (docs/jobs.md#the-settle-rule).
//
// The connection is opened lazily and dropped after any failure; every
// failure is kInfra (the mailbox is not ours: a refused write is an outage).
//
// Thread-safety: one thread.
#pragma once

#include <memory>
#include <pqxx/connection>
#include <string>

#include "base/config.h"
#include "stream/jobs/mailbox_marks.h"

namespace msgx {

class PgMailboxMarks final : public MailboxMarks {
 public:
  // `url`: a libpq connection string (mailbox.url). Does not connect yet.
  // `time_zone`: mailbox.time-zone, a zone name PostgreSQL knows.
  PgMailboxMarks(std::string url, std::string table, MailboxColumns columns,
                 std::string time_zone = "UTC");
  static std::unique_ptr<PgMailboxMarks> FromConfig(const Config& config);
  ~PgMailboxMarks() override;

  Status MarkFromNull(std::span<const MarkRequest> rows, const std::string& status,
                      std::vector<MailboxMarkSeen>* out) override;

 private:
  const std::string url_;
  const std::string table_;
  const MailboxColumns columns_;
  const std::string time_zone_;
  std::unique_ptr<pqxx::connection> conn_;
};

}  // namespace msgx
