// CorpusLoader: `msgx dev load` puts the message corpus (tests/corpus/sis)
// into the local mailbox so that, fed to msgx today, it means something:
//
//   - SEQN: every message gets a new one, consecutive from one more than the
//     largest cminmsgs_subsystem_sequence already in the mailbox (wrapping
//     999999 → 1), so every message is new to identity dedupe, also on a
//     second load;
//   - META DTTM: the load time in airport time, one second apart per message
//     in insertion order, ending at "now";
//   - body times `ddMMMyyHHmm` and dates `ddMMMyy`: per message, the earliest
//     date becomes today (airport time) and every later date tomorrow; the
//     time of day is kept. Tokens must stand alone (not inside a longer
//     alphanumeric run) and be real calendar dates; FFIDs like
//     CA-CA101-A-12DEC031345-D are moved too;
//   - first of all, a generated `SCHD DNLD` whose FLTRs create every flight
//     (FLID) the corpus's FLOP messages refer to, because FLOP never creates a
//     flight (docs/fold.md#flop-updates). Each FLTR carries the required FLID
//     ALCD FLNO MVIN SODT FLTY FLIN ACFT, taken from the first FFID seen for
//     that FLID (ALCD-FLNO-MVIN-SODT-FLIN) when it parses, else synthetic. Its
//     SODT is that time of day, today, or tomorrow if it has already passed;
//   - then the corpus files in name order, except FLOP FDEL (flight delete)
//     messages, which go last so they do not orphan the FLOPs behind them.
//
// Rewriting is textual and touches only the SEQN and DTTM elements and the
// date tokens, so every other byte, including the broken end of the
// malformed ABNR-ADD-1.xml, arrives as it was.
//
// Rows are inserted in that order in one transaction, with status VALID,
// date_received = the load time in airport time (a zone-less reading, as the
// AODB writes; capture reads it in mailbox.time-zone, whose default is the
// airport's), and the subsystem columns from META (SNDR, SEQN, DTTM, STYP,
// TYPE), as an upstream AODB would. A mysql:// or mariadb:// mailbox_url
// loads a MariaDB/MySQL mailbox the same way (MariaDbSession; the account
// needs SELECT and INSERT on the table).
//
// Thread-safety: PlanCorpusLoad and AirportLocalTime are pure; LoadCorpus
// may be called from any thread.
#pragma once

#include <string>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "base/status.h"
#include "codecs/time_zone.h"

namespace msgx::app {

// A broken-down local time.
struct LocalTime {
  int year = 1970, month = 1, day = 1, hour = 0, minute = 0, second = 0;
};

// The wall-clock time in `zone` at `t`.
LocalTime AirportLocalTime(MicrosSinceEpoch t, const TimeZone& zone);

struct CorpusFile {
  std::string name;  // e.g. "FLOP-DELY-1.xml", or "generated:SCHD-DNLD"
  std::string bytes;
};

struct MailboxRow {
  std::string source;  // the file it came from
  std::string xml;     // the rewritten message
  std::string sndr, type, styp;
  int seqn = 0;
  std::string dttm;     // yyyyMMddHHmmss
  std::string sent_at;  // DTTM as "YYYY-MM-DD HH:MM:SS" (NULL if empty)
};

struct LoadPlan {
  std::vector<MailboxRow> rows;            // in insertion order
  std::vector<std::string> created_flids;  // the generated schedule's FLIDs
};

// The pure part: what to insert, given the files, "now" in airport time and
// the first SEQN to use. Files are taken in name order whatever their order
// in `files`.
LoadPlan PlanCorpusLoad(std::vector<CorpusFile> files, const LocalTime& now, int first_seqn);

// Reads `corpus_dir`/*.xml, plans with the clock's "now" in `timezone`, and
// inserts into `table` of the mailbox at `mailbox_url`. Returns the plan
// (rows in insertion order). kConfig for an unreadable or empty corpus or an
// unknown time zone, kInfra for database errors.
Result<LoadPlan> LoadCorpus(const std::string& corpus_dir, const std::string& mailbox_url,
                            const std::string& table, const std::string& timezone,
                            const Clock& clock);

}  // namespace msgx::app
