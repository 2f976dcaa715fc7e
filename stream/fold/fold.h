// Fold: the single writer that turns the log into state (docs/fold.md;
// docs/commit-protocol.md#one-fold-batch-one-writebatch).
//
// For each record, in log order:
//   message  → quarantined? DEAD CODEC_ERROR quarantined:<reason>
//            → META decode (failure ⇒ DEAD with its class)
//            → ignore rules (SKIPPED ignored:<rule>; before anything else)
//            → full decode (failure ⇒ DEAD: MALFORMED/PROTOCOL not
//              replayable, UNSUPPORTED/CODEC_ERROR replayable)
//            → identity (SNDR|TYPE|STYP|SEQN [+day] [+epoch]); bound ⇒
//              SKIPPED duplicate-of:<mailbox id>, WARN + counter when the
//              body differs
//            → Decide() against the overlay; UNSUPPORTED from a handler ⇒
//              DEAD; otherwise bind the identity and apply the Decision
//   replay   → each listed DEAD mailbox id of a replayable class is decided
//              again at the command's offset with the command's time, with
//              the identity key of its first decision and without moving
//              the sender's SEQN tracker; attempts reset, the old error kept
//              in prev_error; others are refused silently (logged)
//   quarantine → nothing at its own offset (the index is consulted at the
//              quarantined offset)
//   history sweep / identity expiry → the pending batch is committed first,
//              then flights with SODT < cutoff / bindings bound before the
//              limit leave state.
//   settings → the pending batch is committed first; the record's decision
//              settings (ignore rules, seed mode, identity, snapshot rule,
//              keep-days, codec limit, the zone's rules) decide every record
//              after it (docs/fold.md#settings-in-the-log). At Open() the
//              settings in force at applied_offset() + 1 come from the log;
//              options.settings only when the log holds none.
// Every record extends the chained digest d(n) = SHA-256(d(n-1) || bytes)
// (state/digest.h) over the record's canonical decision bytes, whatever the
// batching. Up to batch_max records are decided against an in-memory
// overlay and committed with ONE synced WriteBatch holding state, outcomes,
// identity, the applied offset, the fold version, the digest at the batch
// end, and the batch's PendingBatch (state/pending_batch.h: outcome rows,
// events with their payloads, ref_master and flight_hst rows, mirror
// changes) for the applier and the mirror worker.
//
// An infrastructure failure (kInfra from the store) discards the pending
// batch and returns; the caller retries from applied_offset() + 1. Nothing
// is charged to a message.
//
// Thread-safety: one thread; the Fold is the single writer of its store.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "base/config.h"
#include "state/airport_zone.h"
#include "state/decision_settings.h"
#include "state/state_store.h"
#include "stream/fold/active_settings.h"
#include "stream/fold/event_payload.h"
#include "stream/fold/fold_input.h"
#include "stream/fold/handlers/decision.h"
#include "stream/fold/handlers/handlers.h"
#include "stream/fold/pending_builder.h"
#include "stream/fold/state_overlay.h"

namespace msgx {

// Bumped whenever handler semantics change (docs/fold.md#determinism).
// 2: keys and texts bounded to their columns (docs/schema.md#bounded-values).
// 3: a replay keeps its first identity and never moves the SEQN tracker; a
//    replayable DEAD outcome records that identity (docs/fold.md#identity).
inline constexpr std::int64_t kFoldVersion = 3;

struct FoldOptions {
  int batch_max = 1000;
  // The decision settings used only while the log holds no SETTINGS record
  // in force (a log written before settings were recorded, read by a tool;
  // tests). Seed mode (retry_deterministic): a deterministic failure holds
  // the head instead of going DEAD, until an EXHAUST command for it is in
  // the log (see held()).
  DecisionSettings settings = DecisionSettings::Values(Config{});
  // The zone of settings that carry no TZif bytes (tests); outlives the Fold.
  const AirportZone* zone = nullptr;
  // Builds a decoder for each settings' zone and codec limit. When empty,
  // the Fold's `decoder` argument decodes under every setting (tests).
  DecoderFactory make_decoder;
  // Batch ends to cut at (ascending), besides batch_max: a rebuild cuts
  // where PostgreSQL's fold_batch rows end, so their digests can be
  // compared (docs/commit-protocol.md#recovery).
  std::vector<std::int64_t> cut_offsets;
  // Test seam for the upgrade diff (docs/fold.md#the-upgrade-diff): a test
  // folds with a deliberately changed router (`decide`) recorded under a
  // test-only `fold_version`, so that `msgx refold --verify`, which decides
  // with the real handlers, meets batches an "older" fold version decided
  // differently. The service and the tools never set them.
  std::int64_t fold_version = kFoldVersion;
  DecideFn decide = nullptr;  // null: Decide (stream/fold/handlers/handlers.h)

  // The service's and the tools' options: batch_max from `c`, the real
  // decoder, `settings` as the fallback.
  static FoldOptions FromConfig(const Config& c, DecisionSettings settings);
};

// Seed mode: the message that failed deterministically and holds the head.
struct HeldHead {
  std::int64_t offset = 0;
  std::int64_t mailbox_id = 0;
  std::string error_class;
  std::string error;
};

struct FoldCounters {
  std::int64_t records = 0;
  std::int64_t succeeded = 0;
  std::int64_t skipped = 0;
  std::int64_t dead = 0;
  std::int64_t ignored = 0;
  std::int64_t duplicates = 0;
  std::int64_t duplicate_body_differs = 0;
  std::int64_t rejected_records = 0;  // FLOP records refused (logged at info)
  std::int64_t skipped_records = 0;   // records skipped in a message (debug)
  std::int64_t replays = 0;
  std::int64_t replays_refused = 0;
  std::int64_t quarantined = 0;
  std::int64_t identities_expired = 0;
  std::int64_t flights_swept = 0;
  std::int64_t batches = 0;
};

// Called once per decided message (sub = index within a replay command,
// 0 otherwise) after its decision is applied to the overlay; the outbox
// derives events from it.
using DecisionObserver =
    std::function<void(std::int64_t offset, int sub, const Outcome&, const Decision&)>;

class Fold {
 public:
  // REQUIRES: store non-null and outliving the Fold; decoder non-null unless
  // options.make_decoder is set; log may be null (no replays can be
  // resolved, nothing quarantined, options.settings decide).
  Fold(StateStore* store, const MessageDecoder* decoder, const LogSource* log, FoldOptions options);
  Fold(const Fold&) = delete;
  Fold& operator=(const Fold&) = delete;

  // Reads the applied offset, digest and generation from the store and
  // takes the settings in force after it (kConfig when they do not parse).
  Status Open();

  // REQUIRES: Open() succeeded.
  // Folds `records` in order. Records at or below applied_offset() are
  // skipped (a restart re-reads them); a gap is kInternal. Commits every
  // batch_max records and at the end.
  Status Process(const std::vector<FoldInput>& records);

  std::int64_t applied_offset() const { return applied_; }
  // Seed mode: set when the last Process() stopped at a failed head. Every
  // record before it is committed; nothing at or after it is applied. The
  // caller waits (stream/fold/head_retry.h) and calls Process() again from
  // applied_offset() + 1, or appends an EXHAUST command for it first.
  const std::optional<HeldHead>& held() const { return held_; }
  // Replaces options.cut_offsets (ascending): a rebuild check loaded after
  // the Fold was made (stream/service/rebuild_gate.h).
  void set_cut_offsets(std::vector<std::int64_t> cuts) { options_.cut_offsets = std::move(cuts); }
  const std::string& digest() const { return committed_digest_; }
  std::int64_t generation() const { return committed_generation_; }
  const FoldCounters& counters() const { return counters_; }
  // The offset of the SETTINGS record in force (-1: none in the log) and its
  // zone. REQUIRES: Open() succeeded.
  std::int64_t settings_since() const { return active_->since(); }
  const AirportZone& zone() const { return active_->zone(); }
  void set_observer(DecisionObserver o) { observer_ = std::move(o); }

 private:
  struct MessageResult {
    Outcome outcome;
    Decision decision;
    EventSource source;
    MessageTimes times;
    // The identity the message was decided with, once its META decoded
    // (outcome.identity_key holds it only where it was bound or checked).
    std::string identity_key;
  };
  Status FoldOne(const FoldInput& r, std::string* canon);
  // `first`: for a replay, the outcome of the message's earlier decision
  // (its identity key is kept and the SEQN tracker is not moved); nullptr
  // for a message decided at its own offset.
  Result<MessageResult> DecideMessage(const FoldInput& message, std::int64_t decide_offset,
                                      MicrosSinceEpoch now, const Outcome* first);
  // message.decoded when the fold may use it: not a replay, and made with
  // the settings in force (docs/fold.md#decoding-ahead); else nullptr.
  const DecodedAhead* UsableAhead(const FoldInput& message, const Outcome* first);
  Status Replay(const FoldInput& cmd, const ReplayCommand& replay, std::string* canon);
  Status Sweep(const FoldInput& cmd, const HistorySweepCommand& sweep, std::string* canon);
  Status Expire(const FoldInput& cmd, const IdentityExpiryCommand& expiry, std::string* canon);
  Status TakeSettings(const FoldInput& cmd, const SettingsCommand& c, std::string* canon);
  // Points the pending builder at active_'s zone and event shape.
  void PendPerActiveSettings();
  void RecordMessage(std::int64_t offset, int sub, MessageResult& m, MicrosSinceEpoch now,
                     std::string* canon);
  bool AtCut(std::int64_t offset) const;
  Status CommitPending();
  void Rollback();

  StateStore* store_;
  const MessageDecoder* decoder_;
  const LogSource* log_;
  FoldOptions options_;
  std::unique_ptr<ActiveSettings> active_;  // set by Open()
  // The read-ahead's settings last found equal to active_'s (held, so that
  // its address is not reused by other settings while compared).
  std::shared_ptr<const ActiveSettings> verified_ahead_;
  StateOverlay overlay_;
  PendingBuilder pending_;
  DecisionObserver observer_;
  FoldCounters counters_;

  std::int64_t applied_ = -1;
  std::string committed_digest_;
  std::int64_t committed_generation_ = 0;
  // Uncommitted progress.
  std::int64_t last_ = -1;
  std::string digest_;
  std::int64_t generation_ = 0;
  int pending_records_ = 0;
  std::int64_t first_ = 0;            // first offset of the pending batch
  MicrosSinceEpoch last_append_ = 0;  // append time of last_
  std::optional<HeldHead> held_;
};

}  // namespace msgx
