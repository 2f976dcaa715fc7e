// PendingBuilder: collects, while the fold decides a batch, the rows that
// PostgreSQL must receive for it (state/pending_batch.h), and turns them
// into the batch's PendingBatch when the fold commits.
//
// Event routing (docs/dispatch.md#targets):
//   flight changes of a SCHD or SCHS message  → KAFKA:schd (schedule push)
//   every other flight change (FLOP, sweeps)  → KAFKA:msg
//   reference changes                         → KAFKA:ref
// A history sweep also yields one flight_hst row per swept flight (saved
// before swept: the flight leaves live state in the same batch that saves
// it, docs/jobs.md#history-sweep).
//
// Pure: no clock, no I/O; the same decisions give the same bytes.
// Thread-safety: single-threaded (the fold's).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "state/airport_zone.h"
#include "state/pending_batch.h"
#include "state/state_store.h"
#include "stream/fold/event_payload.h"
#include "stream/fold/handlers/decision.h"

namespace msgx {

// The times of a message that proc_state records.
struct MessageTimes {
  MicrosSinceEpoch received_micros = 0;  // 0: unknown
  MicrosSinceEpoch enqueued_micros = 0;  // append time of its log record
};

class PendingBuilder {
 public:
  // REQUIRES: zone outlives the builder.
  explicit PendingBuilder(const AirportZone* zone) : zone_(zone) {}
  // The zone of the settings now in force. REQUIRES: between batches
  // (nothing pending), `zone` outlives its use.
  void set_zone(const AirportZone* zone) { zone_ = zone; }
  // Whether KAFKA:msg events carry their flight, as the settings now in
  // force say. REQUIRES: between batches. KAFKA:schd events and the mirror's
  // flight rows always do.
  void set_event_flight(EventFlight flight) { event_flight_ = flight; }

  // A decided message (sub: its index within a replay command). `now` is
  // the deciding record's append time.
  void AddMessage(std::int64_t offset, int sub, const Outcome& outcome, const Decision& decision,
                  const EventSource& source, const MessageTimes& times, MicrosSinceEpoch now);
  // A history sweep at `offset`: DELETE events and flight_hst rows.
  void AddSweep(std::int64_t offset, const Decision& decision, MicrosSinceEpoch now);

  // The PendingBatch of the batch `write` commits (write.meta is its end);
  // then starts empty. REQUIRES: first <= write.meta.applied_offset.
  PendingBatch Finish(const BatchWrite& write, std::int64_t first_offset,
                      MicrosSinceEpoch last_append_micros);
  // Drops everything collected (a discarded batch).
  void Clear();

 private:
  void AddEvents(std::int64_t offset, int sub, const Decision& d, const EventSource& source,
                 std::string_view flight_target, MicrosSinceEpoch now);

  const AirportZone* zone_;
  EventFlight event_flight_ = EventFlight::kFull;
  std::vector<EventRow> events_;
  std::vector<HistoryRow> history_;
  std::map<std::int64_t, MessageTimes> times_;  // by mailbox id
  std::map<std::pair<std::string, std::string>, MicrosSinceEpoch> ref_times_;
  // The JSON of each flight's latest event, by FLID: Finish() reuses it for
  // the flight's mirror row when the batch ends with that same flight.
  struct RenderedFlight {
    std::shared_ptr<const Flight> flight;
    std::string json;
  };
  std::map<std::string, RenderedFlight, std::less<>> rendered_;
};

}  // namespace msgx
