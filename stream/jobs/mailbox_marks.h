// MailboxMarks: the seam between the processed-mark job
// (stream/jobs/processed_mark.h) and the mailbox table it marks
// (docs/jobs.md#processed-mark). It is the ONE write msgx makes to the
// mailbox (docs/capture.md#the-mailbox-is-not-ours): the processed column
// and the status column of rows msgx has finished with, and only where the
// processed column is still NULL. An adapter per database type implements it
// (PgMailboxMarks for PostgreSQL, MariaDbMailboxMarks for MariaDB/MySQL;
// MakeMailboxMarks picks by mailbox.url).
//
// Contract for implementations:
//   - MarkFromNull writes `processed` and `status` on exactly the asked rows
//     whose processed column is NULL at the moment of the write (the
//     from-null rule: a mark is never overwritten or reverted), in one
//     statement per call, and says for EVERY asked row what it found;
//   - it needs SELECT on the table and UPDATE of the two mark columns only
//     (docs/operations.md#the-mailbox-account);
//   - every failure of the database or driver (refused, read-only,
//     permission denied, unreachable) is a kInfra Status with nothing
//     written, never an exception.
//
// Thread-safety: an implementation is used by one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"

namespace msgx {

// One mailbox row to mark, with the processed time to write.
struct MarkRequest {
  std::int64_t id = 0;
  MicrosSinceEpoch processed = 0;
};

// What the mailbox said of one asked row.
struct MailboxMarkSeen {
  enum class Kind : std::uint8_t {
    kWritten,  // its processed column was NULL and this call wrote the mark
    kFound,    // the row is there and this call did not write it
    kMissing,  // no such row (any more)
  };
  std::int64_t id = 0;
  Kind kind = Kind::kMissing;
  // kFound: the two mark columns as they were found (processed in
  // microseconds since the epoch, read like the received column).
  std::optional<MicrosSinceEpoch> processed;
  std::optional<std::string> status;
};

class MailboxMarks {
 public:
  virtual ~MailboxMarks() = default;

  // Marks the rows of `rows` whose processed column is NULL with their
  // processed time and `status`; appends one MailboxMarkSeen per asked row
  // to `out`, in any order.
  virtual Status MarkFromNull(std::span<const MarkRequest> rows, const std::string& status,
                              std::vector<MailboxMarkSeen>* out) = 0;
};

// The adapter mailbox.url's scheme names: PgMailboxMarks for postgresql://,
// MariaDbMailboxMarks for mysql:// and mariadb://; kConfig for a URL that
// does not parse.
struct Config;
Result<std::unique_ptr<MailboxMarks>> MakeMailboxMarks(const Config& config);

}  // namespace msgx
