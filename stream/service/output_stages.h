// The output stages of `msgx run` (docs/commit-protocol.md#output-stages), as
// runner stages (stream/service/stage.h):
//   "mirror"            pending batches → Redis (stream/mirror/mirror_worker.h);
//   "applier"           pending batches → PostgreSQL (stream/apply/pg_applier.h),
//                       seed mode's held head as a FAILED proc_state row
//                       (once per post to OutputDeps::failed_heads), and
//                       pruning of pending batches applied and mirrored
//                       longer ago than pipeline.pending-retention;
//   "dispatch <target>" one per target (KAFKA:msg, KAFKA:schd, KAFKA:ref),
//                       outbox → Kafka (stream/dispatch/dispatcher.h), gated
//                       by the mirror offset read from Redis
//                       (docs/dispatch.md#the-mirror-before-dispatch-gate).
// All three need leadership: the runner steps them only while this process
// leads, and every write carries the epoch (docs/operations.md#who-writes):
// checked inside the applier's and the dispatchers' own transactions and
// inside the mirror's Lua scripts. A stage whose service is not
// configured (redis.url, postgres.url, kafka.bootstrap-servers empty) is not added, and that is
// logged. The stages wake each other: an applied batch wakes the
// dispatchers of its events' targets, a mirrored one the dispatchers that
// wait at the mirror gate (docs/dispatch.md#who-wakes-a-dispatcher). The runner does the waiting,
// backoff and health. In the drain (StageRunner::BeginDrain) the mirror and the applier are of
// order 1 (after the fold), the dispatchers of order 2; a dispatcher whose head is not mirrored yet
// waits (kWaitUntil, "the mirror gate"), it is not idle. Figures: the mirror's and the applier's
// "offset" and "lag" (records the fold has made past it; none until the offset was first read);
// each dispatcher's "sent", "dead", and "pending" = "lag" (its target's PENDING rows, counted at
// most once a second with its DEAD rows into msgx_outbox_pending{target} and
// msgx_outbox_dead{target}).
#pragma once

#include <cstdint>
#include <string>

#include "base/config.h"
#include "state/airport_zone.h"
#include "state/state_store.h"
#include "stream/fold/failed_head.h"
#include "stream/pg/leadership_keeper.h"
#include "stream/service/stage_runner.h"

namespace msgx {

struct OutputDeps {
  const Config* config = nullptr;
  StateStore* store = nullptr;
  const AirportZone* zone = nullptr;
  std::string log_uuid;
  LeadershipKeeper* leader = nullptr;  // REQUIRED when postgres.url is set
  Clock* clock = nullptr;
  // Seed mode's held head, which the applier shows in proc_state as FAILED
  // (docs/fold.md#seed-mode); null: not shown.
  const FailedHeadBoard* failed_heads = nullptr;
};

// The stage names, for Wake().
inline constexpr const char* kMirrorStage = "mirror";
inline constexpr const char* kApplierStage = "applier";

// Builds the producers (kConfig when the delivery settings are weakened,
// naming the key) and adds the stages to `runner`.
// REQUIRES: everything in deps and the runner outlive the stages.
Status AddOutputStages(const OutputDeps& deps, StageRunner* runner);

}  // namespace msgx
