// RunService: `msgx run`, the service (SPEC §11).
//
// What runs now (issue 4): capture (mailbox → log), command intake
// (msgx_command → log), the fold (log → state) and the HTTP surface. The
// Redis mirror, the PostgreSQL applier and the dispatcher are built and
// tested as components but not yet wired in (README status table).
//
// Start-up, in order:
//   1. the exclusive state.dir lock (a second `msgx run` on the same
//      directory waits here and says who holds it);
//   2. the log and state stores, the time zone and the decoder;
//   3. crash poison: records that killed the process twice are quarantined;
//   4. the crash guard's signal handlers;
//   5. capture and intake threads, then the fold on the calling thread.
// SIGTERM/SIGINT stop every loop after its current step (the fold finishes
// and commits its current batch); then RunService returns 0. A bug-class
// failure (kInternal: a corrupt log, a gap) stops the service with 1.
#pragma once

#include "base/config.h"

namespace msgx::app {

int RunService(const Config& config);

}  // namespace msgx::app
