// RunService: `msgx run`, the service
// (docs/operations.md#running-the-service-msgx-run).
//
// Start-up, in order:
//   1. the exclusive state.dir lock (a second `msgx run` on the same
//      directory waits here and says who holds it);
//   2. the log and state stores, the time zone and the decoder;
//   3. PostgreSQL leadership (stream/pg/leadership_keeper.h): an advisory lock
//      and a new epoch; a second process on the same databases waits here
//      and says who leads; a pipeline row of another log stops start-up;
//   4. the rebuild check: a state store behind PostgreSQL is rebuilt with
//      batches cut at PostgreSQL's fold_batch ends, digests compared;
//   5. crash poison and the crash guard's signal handlers;
//   6. capture and intake threads, the leadership keeper, the output stages
//      (mirror, applier, dispatchers: stream/service/output_stages.h) and HTTP; then the
//      fold on the calling thread.
// SIGTERM/SIGINT stop every loop after its current step (the fold finishes
// and commits its current batch); then RunService returns 0. A bug-class
// failure (kInternal: a corrupt log, a gap, SQLSTATE 22/23, a digest
// mismatch) stops the service with 1.
#pragma once

#include "base/config.h"

namespace msgx::app {

int RunService(const Config& config);

}  // namespace msgx::app
