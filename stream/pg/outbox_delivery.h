// The outbox's delivered ranges (migrations/V8__outbox_delivery.sql;
// docs/dispatch.md#delivered-ranges).
//
// A dispatcher sends its target's PENDING events in event_id order, and
// each Kafka transaction carries a prefix of that order. So instead of a
// SENT mark on every row, it records one range per transaction in
// outbox_delivery: (target, first_event_id, last_event_id, events,
// sent_at). An event is delivered when
//   * its row says SENT (rows marked before V8, and replayed events, which
//     are marked one by one because they sit below the ranges), or
//   * its row says PENDING, it was never replayed, and one of its target's
//     ranges holds its event_id.
// The target's delivered position is the highest last_event_id of its
// ranges; every non-replayed PENDING row below it is delivered. That holds
// because event ids commit in order: one applier inserts them, one batch
// at a time, behind the single-writer fence (docs/commit-protocol.md).
//
// The view msg_event_state gives every row its state by these rules.
//
// Pure SQL text and one write; thread-compatible.
#pragma once

#include <cstdint>
#include <pqxx/pqxx>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace msgx {

// The SQL expression of `target`'s delivered position (0 when it has no
// range). `target` is an SQL expression: a quoted literal or a parameter.
std::string DeliveredThroughSql(std::string_view target);

// The condition on msg_event (unaliased columns) of `target`'s events that
// are still to deliver and lie above its delivered position; and of those
// that lie at or below it, which are only replayed ones. Each is served by
// an index: the target's PENDING index (V6) led by event_id, and
// msg_event_pending_replayed_idx (V8). Kept apart, not joined by OR, which
// would read the target's whole PENDING index: every delivered event
// stays in it until the event retention deletes the row. For the same
// reason the replayed condition names its target through a sub-select:
// a plan made while the outbox was empty, and kept by a session's
// prepared statement, would otherwise read the PENDING index below the
// delivered position, every delivered event, on every head read
// (docs/performance.md#the-head-read-planned-on-an-empty-outbox-2026-12-06).
std::string UndeliveredAboveSql(std::string_view target);
std::string UndeliveredReplayedSql(std::string_view target);
// The SQL expression of the number of `target`'s undelivered events: the
// two branches above, counted apart and added.
std::string UndeliveredCountSql(std::string_view target);

// What one Kafka transaction delivered, as the rows to record.
struct Delivery {
  std::int64_t first_event_id = 0;  // of the events never replayed; 0: none
  std::int64_t last_event_id = 0;
  int events = 0;
  std::vector<std::int64_t> replayed_ids;  // marked SENT row by row
};

// Records `d` as delivered at `sent_at` (a timestamptz literal) in `tx`:
// one outbox_delivery row for its range, and a SENT mark on each replayed
// row still PENDING. Returns the events it recorded: a redo of the same
// range inserts nothing and counts none.
std::int64_t RecordDelivery(pqxx::dbtransaction& tx, const std::string& target, const Delivery& d,
                            const std::string& sent_at);

class PgSession;

// Who records a delivery: the pipeline row's name, and this leader's epoch
// and log UUID (stream/pg/pg_leadership.h); an empty log_uuid records it
// unfenced.
struct DeliveryFence {
  std::string pipeline;
  std::int64_t epoch = 0;
  std::string log_uuid;
};

// RecordDelivery in a transaction of its own on `pg`, fenced as RunFenced
// (kLock) does. A delivery of events never replayed (every batch but a
// replay's) is one statement that carries its own fence: the pipeline row
// locked FOR KEY SHARE and the range inserted only when its epoch and log
// are `fence`'s, in one round trip instead of BEGIN, the fence, the insert
// and COMMIT (docs/dispatch.md#delivered-ranges). The fence's errors and
// the outage rule are RunFenced's.
Result<std::int64_t> RecordDeliveryFenced(PgSession* pg, const DeliveryFence& fence,
                                          const std::string& target, const Delivery& d,
                                          const std::string& sent_at);

}  // namespace msgx
