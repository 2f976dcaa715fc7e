// Decision: everything one message (or command) does to fold state, as
// decided by a pure handler (stream/fold/handlers/handlers.h). Only the fold driver
// applies a Decision (to its overlay); the outbox events
// (docs/dispatch.md#event-payloads) are derived from it (Events()), in a
// deterministic order:
//   flight changes in decision order, then reference changes in decision
//   order; each event's position is its index in that sequence, so
//   event_key = "<log offset>:<sub>:<position>" is stable (sub is the
//   message's index within a replay command, 0 otherwise).
//
// Thread-safety: plain values.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "state/flight.h"
#include "state/outcome.h"

namespace msgx {

enum class ChangeOp : std::uint8_t { kUpsert = 0, kDelete = 1 };
std::string_view ChangeOpName(ChangeOp op);  // "UPSERT" / "DELETE"

// One field or child list that changed. For a field, before/after are the
// values (null = absent); for a list, list_before/list_after.
struct FieldChange {
  std::string name;
  bool is_list = false;
  Value before;
  Value after;
  // Shared with the records compared (SharedEntries, state/flight.h): no
  // copy, and their kept renderings serve the change's JSON too.
  SharedEntries list_before;
  SharedEntries list_after;
  bool operator==(const FieldChange&) const = default;
};

struct FlightChange {
  ChangeOp op = ChangeOp::kUpsert;
  std::string flid;
  bool created = false;              // upsert of a flight that did not exist
  std::vector<FieldChange> changes;  // sorted by name
  // Upsert: the state after the change. Delete: the last state (for
  // flight_hst and the DELETE event payload). Never null; shared with the
  // overlay (immutable once decided).
  std::shared_ptr<const Flight> flight;
  std::string cause;  // delete only: fdel, schd-del, snapshot-window, history-sweep
};

struct ReferenceChange {
  ChangeOp op = ChangeOp::kUpsert;
  std::string type;
  std::string key;
  std::vector<FieldChange> changes;
  ReferenceRecord record;  // after (upsert) or last state (delete)
};

// A record of the message that was rejected or skipped, with why (logged;
// counted in the outcome's last_error).
struct Rejection {
  int record_index = 0;  // 1-based position in the message
  std::string key;       // FLID or reference key
  std::string reason;
};

struct Decision {
  OutcomeState state = OutcomeState::kSucceeded;
  // SKIPPED: the reason (stale-snapshot, unknown-flight:<FLID>, ...).
  // SUCCEEDED: empty, or a summary of rejected/skipped records.
  std::string reason;
  std::vector<FlightChange> flights;
  std::vector<ReferenceChange> references;
  std::vector<Rejection> rejected;  // FLOP rejections
  std::vector<Rejection> skipped;   // records skipped without rejection
                                    // (SCHD FLTRs, unknown FLIDs)
  bool new_generation = false;      // a SCHD snapshot: bump the generation
};

// The differences between two records, sorted by name; empty when equal.
std::vector<FieldChange> DiffRecords(const Record& before, const Record& after);

// One outbox event derived from a Decision.
struct EventRef {
  bool is_flight = true;
  std::size_t index = 0;  // into flights or references
  std::size_t position = 0;
};
std::vector<EventRef> Events(const Decision& d);

// The canonical bytes of a decision, the input of the chained digest
// (docs/fold.md "Digest"): outcome, reason, rejections, skips, generation
// flag, and every change (op, key, changed fields with before and after).
void AppendDecisionCanonical(const Decision& d, const AirportZone& zone, std::string* out);

}  // namespace msgx
