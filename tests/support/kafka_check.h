// KafkaTailCheck: after `msgx run` has stopped, reads one outbox target's
// topic back and checks it against that target's rows in msg_event
// (docs/dispatch.md#delivery-guarantees):
//   - every message carries the msgx-event-id of an event of the target,
//     with exactly its payload_json, and that event is SENT;
//   - from the oldest message the broker still holds on, every SENT event
//     is there: librdkafka's mock cluster keeps only the tail of a partition
//     (about 5 MB), so older events may be gone;
//   - each key's events first appear in event_id order (the dispatcher's
//     per-target FIFO); a copy of an event older than the oldest message
//     held is a second copy too (its first fell off the tail);
//   - with `require_once`, no event is there twice: delivery is exactly
//     once for a read_committed consumer (docs/dispatch.md#exactly-once);
//     each copy after the first is counted, and is a problem only then.
//     (librdkafka's mock shows an aborted transaction's messages to
//     read_committed consumers too, so a kill -9 in the middle of a batch
//     can leave a copy there that a real broker would hide.)
//   - with `msgx_log` (the stderr of the `msgx run`s that sent, appended),
//     a SENT event missing from the topic is excused when a reconcile
//     marked it SENT without a send (its "marked SENT without a send:
//     event_id A..B" line): counted in `reconciled_missing`, not a problem.
//     A kill -9 inside a batch's transaction can leave that transaction's
//     progress record in librdkafka's mock without the batch (they go to
//     different partitions, so different requests), and the mock shows an
//     unfinished transaction's records to read_committed consumers, so the
//     next reconcile reads a high-water the batch never reached. A real
//     broker aborts that transaction when the next producer starts, and its
//     read_committed reader never sees the record
//     (docs/dispatch.md#exactly-once, "What the mock cannot show"). Any
//     other missing event is still a problem. So is a partition that holds
//     none of the target's events, unless a reconcile marked every SENT one
//     (a whole transaction's progress record shown without its batch).
// The topic is read from its beginning to its end (partition 0, as a
// read_committed consumer, for at most 30 s); nothing may write to it
// meanwhile.
//
// Thread-safety: none needed; each test thread calls it for itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace msgx::testing {

struct KafkaTailCheck {
  std::vector<std::string> problems;  // empty when complete and in order
  std::size_t read = 0;               // messages read, re-sends included
  int duplicates = 0;                 // of those, copies of an event read before
  std::int64_t oldest_event_id = -1;  // of the oldest message held; -1: none
  int reconciled_missing = 0;         // missing, but marked by a reconcile (above)
};

// `target` is the outbox target ("KAFKA:msg") whose events go to `topic`.
KafkaTailCheck CheckKafkaTail(const std::string& bootstrap, const std::string& topic,
                              const std::string& own_url, const std::string& target,
                              bool require_once = true, const std::string& msgx_log = "");

}  // namespace msgx::testing
