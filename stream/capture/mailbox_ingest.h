// MailboxIngest: the legacy ingest endpoint's write path
// (`POST /cminmsgs/send`, docs/operations.md#http): stores one message in the
// mailbox as an upstream sender would, and answers with the stored id. It is
// one of the two writes msgx makes to the mailbox database
// (docs/capture.md#the-mailbox-is-not-ours); it never changes its schema.
//
// Store() checks, in order:
//   - the size against codec.max-bytes            → kCodecError ("too large"; HTTP 413)
//   - the charset (Content-Type charset, then the prolog) and the bytes, and
//     transcodes to UTF-8: an unknown charset    → kCodecError (HTTP 415),
//     bytes invalid for it                        → kMalformed (HTTP 400)
//   - that the text is well-formed XML            → kMalformed (HTTP 400)
// Nothing is stored when a check fails. A well-formed message with a bad
// META or body is stored: it reaches the fold and ends DEAD with its reason,
// so nothing is lost and the sender learns why from proc_state.
// The row: the UTF-8 text, date_received = the injected clock's now written
// in mailbox.time-zone as capture reads it (docs/capture.md#mailbox-time: a
// TIMESTAMP-without-zone column receives the wall-clock reading in that
// zone), status VALID, and the subsystem columns from META when META decodes.
//
// On a MariaDB/MySQL mailbox (mailbox.url mysql:// or mariadb://) the same
// row is written through MariaDbSession (utf8mb4, time_zone '+00:00'; a
// DATETIME column receives the wall-clock reading in mailbox.time-zone, a
// TIMESTAMP column the instant: MariaDbTimeColumn); the account then needs
// INSERT on the table.
//
// Thread-safety: Store() may be called from many threads (a connection per
// call is taken from an internal pool of one, under a mutex).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "base/clock.h"
#include "base/config.h"
#include "base/result.h"
#include "codecs/sis_decoder.h"
#include "stream/mariadb/mariadb_session.h"
#include "stream/mariadb/mariadb_time.h"
#include "stream/pg/pg_session.h"

namespace msgx {

class MailboxIngest {
 public:
  // REQUIRES: decoder and clock outlive the ingest; on MariaDB,
  // mailbox.time-zone names a zone under /usr/share/zoneinfo (Config checks).
  MailboxIngest(const Config& config, const sis::SisDecoder* decoder, Clock* clock);

  // Stores `body` sent with `content_type`; returns the new mailbox id.
  Result<std::int64_t> Store(const std::string& body, const std::string& content_type);

  std::int64_t max_bytes() const { return max_bytes_; }

 private:
  std::string table_;
  MailboxColumns columns_;
  std::int64_t max_bytes_;
  const sis::SisDecoder* decoder_;
  Clock* clock_;
  std::mutex mu_;
  std::unique_ptr<PgSession> session_;           // guarded by mu_; PostgreSQL
  std::unique_ptr<MariaDbSession> mariadb_;      // guarded by mu_; MariaDB/MySQL
  std::unique_ptr<MariaDbTimeColumn> received_;  // guarded by mu_; with mariadb_
  std::string time_zone_;                        // mailbox.time-zone
  Status zone_error_ = Status::Ok();             // its TZif file did not load
};

// The charset parameter of a Content-Type header, lower-cased ("" if none).
std::string CharsetOf(const std::string& content_type);

}  // namespace msgx
