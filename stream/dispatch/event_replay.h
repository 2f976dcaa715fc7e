// Replay of DEAD outbox events (docs/dispatch.md#replay-of-dead-events;
// `msgx replay --event` and `--target T --dead`). Returns DEAD events to
// PENDING with attempts reset and replayed_at set; error_class and last_error
// are kept for audit. Their re-delivery carries msgx-replay: 1. Only DEAD
// events change; other ids are ignored. Events are outputs, not state, so this
// is a direct UPDATE of the outbox, not a log command: the fold's state is
// untouched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "stream/pg/pg_session.h"

namespace msgx {

// Replays the DEAD events among `event_ids`. Returns how many changed.
Result<int> ReplayDeadEvents(PgSession* pg, const std::vector<std::int64_t>& event_ids,
                             MicrosSinceEpoch now);
// Replays every DEAD event of `target` ("KAFKA:msg" …). Returns how many.
Result<int> ReplayDeadEventsOfTarget(PgSession* pg, const std::string& target,
                                     MicrosSinceEpoch now);

}  // namespace msgx
