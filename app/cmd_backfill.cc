// `msgx backfill --reconcile ID… [--by WHO]` (docs/operations.md#the-abandon-list;
// docs/jobs.md#reconciliation): settles rows of the processed mark's abandon
// list as RECONCILED once the operator has settled them with the mailbox's
// owner (stream/jobs/mark_reconcile.h). Works while `msgx run` runs.
// Exit 0 when every given id is RECONCILED afterwards (now or before), 1
// when some is not on the abandon list (each is named), 2 on usage errors.
#include <CLI/CLI.hpp>
#include <cstdlib>
#include <iostream>
#include <memory>

#include "app/command.h"
#include "app/setup.h"
#include "stream/jobs/mark_reconcile.h"
#include "stream/pg/pg_session.h"

namespace msgx::app {
namespace {

struct BackfillOptions {
  std::vector<std::int64_t> reconcile;
  std::string by;
};

int Run(const Config& config, const BackfillOptions& o) {
  if (o.reconcile.empty()) {
    std::cerr << "msgx backfill: give --reconcile ID…\n";
    return 2;
  }
  if (config.postgres_url.empty()) {
    std::cerr << "msgx backfill: postgres.url is not configured\n";
    return 2;
  }
  PgSession pg(config.postgres_url);
  auto r = ReconcileAbandoned(&pg, o.reconcile, o.by, SystemClock::Default()->NowMicros());
  if (!r.ok()) {
    std::cerr << "msgx backfill: " << r.status().ToString() << "\n";
    return 1;
  }
  std::cout << "reconciled " << r->reconciled << " abandoned row(s)\n";
  int rc = 0;
  for (const auto& [id, state] : r->state) {
    if (state == "RECONCILED") continue;
    rc = 1;
    std::cerr << "msgx backfill: msg_id " << id << " is not on the abandon list ("
              << (state.empty() ? std::string("no settled mark") : "mark_state " + state) << ")\n";
  }
  return rc;
}

}  // namespace

void RegisterBackfill(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  auto o = std::make_shared<BackfillOptions>();
  const char* user = std::getenv("USER");
  o->by = user != nullptr ? user : "operator";
  CLI::App* cmd = root.add_subcommand("backfill", "The processed mark's abandon list");
  cmd->add_option("--reconcile", o->reconcile, "msg_ids of ABANDONED rows to settle as RECONCILED");
  cmd->add_option("--by", o->by, "Who reconciles (kept in proc_state.mark_reason)");
  cmd->callback([&global, exit_code, o] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    *exit_code = Run(*config, *o);
  });
}

}  // namespace msgx::app
