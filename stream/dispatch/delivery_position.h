// DeliveryPosition: where an outbox event stands in its target's order, in
// terms that survive a PostgreSQL restore (docs/dispatch.md#exactly-once;
// issue 20).
//
// An event's position is (state_version, sub, position): the log offset of
// the change, then the message's index inside that record (0 for a plain
// record, the n-th message of a REPLAY command), then the event's place in
// that message's decision. These are the last two fields of its event_key
// ("<offset>:<sub>:<position>"). The fold makes the events of one offset in
// exactly this order and the applier inserts them in it, so for events that
// are not replays the position order is the event_id order; event_id itself
// is not used, because a re-apply after a restore issues the ids again.
//
// The progress record (the value of the last message of every batch
// transaction) is the text "<state_version>:<sub>:<position>" of the highest
// non-replay event that transaction delivered.
//
// Pure values; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"

namespace msgx {

struct DeliveryPosition {
  std::int64_t state_version = 0;
  std::int64_t sub = 0;
  std::int64_t position = 0;
  auto operator<=>(const DeliveryPosition&) const = default;
};

// The position of the event with this state_version and event_key. The key
// must be "<offset>:<sub>:<position>" (the last two non-negative integers;
// the offset field is not read, state_version is); anything else is
// kInternal (only the fold writes event keys).
Result<DeliveryPosition> PositionOfEvent(std::int64_t state_version, std::string_view event_key);

// The progress record's value for `p`, and back. A value that is not three
// integers separated by ':' is kProtocol (someone else wrote to the key).
std::string EncodeProgress(const DeliveryPosition& p);
Result<DeliveryPosition> DecodeProgress(std::string_view value);

}  // namespace msgx
