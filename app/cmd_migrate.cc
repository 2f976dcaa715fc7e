// `msgx migrate [--migrations-dir DIR]`: applies the migration files to the
// own PostgreSQL database (postgres.url); idempotent (migrations/migrator.h).
// DIR defaults to the installed share/msgx/migrations (app/data_dir.h).
// Exit 0 when the database is up to date, 1 when a file's SQL failed or
// PostgreSQL is unreachable, 2 for configuration errors (no postgres.url, a
// postgres.url equal to mailbox.url, a changed or missing applied file).
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command.h"
#include "app/data_dir.h"
#include "app/setup.h"
#include "migrations/migrator.h"

namespace msgx::app {

void RegisterMigrate(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* cmd = root.add_subcommand("migrate", "Apply migrations to the own PostgreSQL database");
  auto dir = std::make_shared<std::string>(DataDir("migrations", MSGX_DEFAULT_MIGRATIONS_DIR));
  cmd->add_option("--migrations-dir", *dir, "Directory of V<n>__<name>.sql files")
      ->capture_default_str();
  cmd->callback([&global, exit_code, dir] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    if (config->postgres_url.empty()) {
      std::cerr << "msgx: postgres.url is not configured (MSGX_POSTGRES_URL)\n";
      *exit_code = 2;
      return;
    }
    // Never run DDL on the mailbox database
    // (docs/capture.md#the-mailbox-is-not-ours).
    if (config->postgres_url == config->mailbox_url) {
      std::cerr << "msgx: postgres.url equals mailbox.url; migrations never touch the "
                   "mailbox database\n";
      *exit_code = 2;
      return;
    }
    Result<MigrationReport> report = Migrator(*dir).Migrate(config->postgres_url);
    if (!report.ok()) {
      std::cerr << "msgx migrate: " << report.status().ToString() << "\n";
      *exit_code = report.status().error_class() == ErrorClass::kConfig ? 2 : 1;
      return;
    }
    for (const std::string& name : report->applied) std::cout << "applied " << name << "\n";
    std::cout << "schema up to date: " << report->already_applied << " already applied, "
              << report->applied.size() << " applied now\n";
    *exit_code = 0;
  });
}

}  // namespace msgx::app
