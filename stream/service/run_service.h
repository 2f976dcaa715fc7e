// RunService: `msgx run`, the service
// (docs/operations.md#running-the-service-msgx-run).
//
// Start-up, in order:
//   1. the exclusive state.dir lock (a second `msgx run` on the same
//      directory waits here and says who holds it);
//   2. the log and state stores (their block cache already sized by the
//      caller: app/setup.h), once state.dir has state.min-free-mb free, an I/O
//      error while opening retried as an outage (docs/operations.md#error-classes);
//   3. one attempt at PostgreSQL leadership (stream/pg/leadership_keeper.h):
//      an advisory lock and a new epoch; a pipeline row of another log stops
//      start-up; leading or not, start-up goes on (the keeper's thread keeps
//      trying), since capture and the fold need no leadership
//      (docs/operations.md#standby);
//   4. crash poison and the crash guard's signal handlers;
//   5. the rebuild check's reader (stream/service/rebuild_fetcher.h): a state
//      store behind PostgreSQL is rebuilt with batches cut at PostgreSQL's
//      fold_batch ends, digests compared (stream/service/rebuild_gate.h);
//   6. the stages, all handed to one StageRunner
//      (stream/service/stage_runner.h): capture and intake
//      (stream/service/input_stages.h), the fold (stream/service/fold_stage.h),
//      the mirror, the applier and the dispatchers
//      (stream/service/output_stages.h), each on a thread of its own; the
//      leadership keeper; HTTP (from before step 1); the systemd watchdog's
//      pings (from READY=1, base/watchdog.h).
// The first SIGTERM/SIGINT during start-up stops it at once; once the stages
// run it begins the drain (docs/operations.md#stopping): /readyz 503
// "draining", capture, intake and the jobs stop, the fold, mirror, applier
// and dispatchers finish what is committed upstream of them, for at most
// shutdown.drain-timeout; then everything left stops after its step. A
// second signal (or a foreign log) stops at once. A stage that fails on a
// bug (kInternal: a corrupt log, a gap, SQLSTATE 22/23, a digest mismatch)
// stops alone, logs an ALARM and turns /readyz 503; the rest go on until
// SIGTERM. Returns 0 when no stage failed (a drain cut by its bound
// included: nothing is lost), 1 when one did (or leadership failed), 2 on
// a configuration error (a foreign log included, even when found later).
#pragma once

#include "base/config.h"

namespace msgx {

int RunService(const Config& config);

}  // namespace msgx
