// PendingBatch: everything PostgreSQL and the Redis mirror must receive for
// one fold batch [first_offset, last_offset]
// (docs/commit-protocol.md#one-fold-batch-one-writebatch). The fold writes
// it in the same synced RocksDB WriteBatch as the state it describes
// (StateStore column family `pending`), so a crash can never separate state
// from its side effects.
// The applier (stream/apply/pg_applier.h) and the mirror worker
// (stream/mirror/mirror_worker.h) consume it; both are idempotent, so a redo after
// a crash is harmless.
//
// Rows are net per key within the batch, because one multi-row INSERT ... ON
// CONFLICT cannot touch the same row twice:
//   outcomes    one per mailbox id (the last decision; a replay in the same
//               batch wins and carries prev_error), in mailbox-id order;
//   references  one per (rtype, rkey), in key order;
//   flights     one per FLID, the state at last_offset, in FLID order;
//   events      every event, in log order (event_key unique);
//   history     one per (flid, state_version), in sweep order.
//
// Encoded with flatbuffers (schemas/pending.fbs). Pure values; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "base/result.h"
#include "state/outcome.h"

namespace msgx {

inline constexpr std::string_view kTargetMsg = "KAFKA:msg";
inline constexpr std::string_view kTargetSchd = "KAFKA:schd";
inline constexpr std::string_view kTargetRef = "KAFKA:ref";

// One proc_state row.
struct OutcomeRow {
  Outcome outcome;
  MicrosSinceEpoch received_micros = 0;  // 0: unknown (NULL)
  MicrosSinceEpoch enqueued_micros = 0;  // append time of the message record
  bool operator==(const OutcomeRow&) const = default;
};

// One msg_event row.
struct EventRow {
  std::string event_key;  // "<offset>:<sub>:<position>"
  std::string target;     // kTargetMsg / kTargetSchd / kTargetRef
  std::string partition_key;
  std::string event_type;  // UPSERT / DELETE
  std::int64_t state_version = 0;
  std::string payload_json;
  std::int64_t source_msg_id = 0;  // 0: none (a sweep)
  MicrosSinceEpoch created_micros = 0;
  bool operator==(const EventRow&) const = default;
};

// One ref_master upsert, or a delete.
struct ReferenceRow {
  std::string rtype;
  std::string rkey;
  bool deleted = false;
  std::string payload_json;  // upsert only
  std::string source;
  std::int64_t state_version = 0;
  MicrosSinceEpoch refreshed_micros = 0;
  bool operator==(const ReferenceRow&) const = default;
};

// flight_hst's text columns: alcd VARCHAR(8), flno VARCHAR(16), mvin
// VARCHAR(4). The fold cuts the values to fit (docs/schema.md#bounded-values).
inline constexpr std::size_t kMaxHistoryAlcd = 8;
inline constexpr std::size_t kMaxHistoryFlno = 16;
inline constexpr std::size_t kMaxHistoryMvin = 4;

// One flight_hst row: a swept flight's last state.
struct HistoryRow {
  std::string flid;
  std::int64_t state_version = 0;  // the sweep's offset
  std::string alcd;
  std::string flno;
  std::string mvin;
  std::optional<MicrosSinceEpoch> sodt;
  std::string payload_json;
  MicrosSinceEpoch swept_micros = 0;
  bool operator==(const HistoryRow&) const = default;
};

// One flightInfo entry for the mirror.
struct FlightRow {
  std::string flid;
  std::optional<std::string> json;  // nullopt: deleted
  bool operator==(const FlightRow&) const = default;
};

struct PendingBatch {
  std::int64_t first_offset = 0;
  std::int64_t last_offset = 0;
  std::int64_t fold_version = 0;
  std::int64_t generation = 0;  // snapshot generation at last_offset
  std::string digest;           // 32 raw bytes: d(last_offset)
  MicrosSinceEpoch last_append_micros = 0;
  std::vector<OutcomeRow> outcomes;
  std::vector<EventRow> events;
  std::vector<ReferenceRow> references;
  std::vector<HistoryRow> history;
  std::vector<FlightRow> flights;
  bool operator==(const PendingBatch&) const = default;
};

std::string EncodePendingBatch(const PendingBatch& batch);

// Encodes pending batches into one buffer that it keeps and reuses: a fold
// batch is megabytes, and a fresh buffer of that size each time costs the
// page faults of touching it again (StateStore::Commit). The same bytes as
// EncodePendingBatch. Thread-safety: one thread at a time.
class PendingBatchEncoder {
 public:
  PendingBatchEncoder();
  ~PendingBatchEncoder();
  PendingBatchEncoder(const PendingBatchEncoder&) = delete;
  PendingBatchEncoder& operator=(const PendingBatchEncoder&) = delete;

  // The encoded bytes, valid until the next Encode() or the encoder's end.
  std::string_view Encode(const PendingBatch& batch);

 private:
  struct Buffer;
  std::unique_ptr<Buffer> buffer_;
};
// kInternal when the bytes are not a pending batch.
Result<PendingBatch> DecodePendingBatch(std::string_view bytes);
// (first_offset, last_offset) without decoding the rows.
Result<std::pair<std::int64_t, std::int64_t>> PendingBatchRange(std::string_view bytes);
// last_append_micros without decoding the rows.
Result<MicrosSinceEpoch> PendingBatchLastAppend(std::string_view bytes);

}  // namespace msgx
