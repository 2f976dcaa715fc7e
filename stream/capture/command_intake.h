// CommandIntake: moves operator commands from the own database's
// `msgx_command` table into the log
// (docs/operations.md#commands-while-the-service-runs), in id order, each
// exactly once.
//
// Table shape: migrations/V1__init.sql (command_id BIGSERIAL, kind,
// args_json TEXT, requested_by, created_at, state PENDING|APPENDED|REJECTED,
// log_offset, appended_at, error). Intake takes rows with state = 'PENDING'
// whose kind is one of the log commands below; other kinds (REPLAY_EVENT,
// an outbox operation) are left to their own handler.
//
// kind and args_json:
//   REPLAY_MSG       {"mailbox_ids": [id, …]}      (non-empty; REPLAY too)
//   HISTORY_SWEEP    {"cutoff_micros": N}
//   IDENTITY_EXPIRY  {"before_micros": N}
// An appended row becomes APPENDED with log_offset and appended_at. A row
// whose args do not parse is not appended; it becomes REJECTED with error.
//
// QUARANTINE rows are taken only to be refused: never appended, REJECTED
// with an error that says why. A quarantine is a log command only the
// crash-poison step appends, at start-up and for an offset above the
// applied one (stream/fold/crash_poison.h); one naming an offset already
// folded would change how a re-fold decides it (docs/decisions.md).
//
// Crash safety: the log store indexes each appended command by its id in
// the same WriteBatch as the record (LogStore::AppendCommands). A row found
// PENDING whose id is already in the log (a crash between the append and the
// UPDATE) is only marked, with the offset it already has: never appended
// twice. The UPDATE writes only where state is still PENDING.
//
// Order: rows are taken in id order. A command whose transaction commits
// after a higher id was appended is appended after it (commands are
// independent operator actions; nothing is lost).
//
// Thread-safety: one thread drives an intake; the LogStore may be shared.
#pragma once

#include <memory>
#include <pqxx/connection>
#include <string>

#include "base/result.h"
#include "state/log_store.h"

namespace msgx {

struct IntakeOutcome {
  int appended = 0;   // new command records
  int recovered = 0;  // already in the log; only the mark was missing
  int rejected = 0;   // could not be parsed; state REJECTED with error
  bool more = false;  // a full batch: poll again at once
};

class CommandIntake {
 public:
  // `url`: the own database (postgres.url). REQUIRES: log outlives this.
  CommandIntake(std::string url, LogStore* log, int batch_max = 100,
                std::string table = "msgx_command");
  ~CommandIntake();
  CommandIntake(const CommandIntake&) = delete;
  CommandIntake& operator=(const CommandIntake&) = delete;

  // One step. kInfra on an outage of PostgreSQL or the disk; retry later.
  Result<IntakeOutcome> Poll();

 private:
  const std::string url_;
  LogStore* const log_;
  const int batch_max_;
  const std::string table_;
  std::unique_ptr<pqxx::connection> conn_;
};

// The kinds intake takes from msgx_command (the IN list of its SELECT): the
// log commands it appends, and QUARANTINE, which it takes only to refuse.
inline constexpr const char* kLogCommandKinds[] = {"REPLAY_MSG", "REPLAY", "QUARANTINE",
                                                   "HISTORY_SWEEP", "IDENTITY_EXPIRY"};

// Parses one msgx_command row's kind and args_json into command arguments;
// kMalformed naming what is wrong, kUnsupported for QUARANTINE (refused
// whatever its args).
Result<CommandArgs> ParseCommandArgs(const std::string& kind, const std::string& args_json);

}  // namespace msgx
