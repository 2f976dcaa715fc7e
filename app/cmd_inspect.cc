// `msgx inspect flight FLID [--at OFFSET] [--json]`: one flight now (the
// live state store, opened read-only) or as of a log offset (a scratch fold
// of the log up to OFFSET: time travel, docs/fold.md#tools).
//
// Output: --json prints the flight's canonical JSON; otherwise one
// "FIELD: value" line per field and list. Exit 0 found, 1 not found, 2 setup
// error.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command.h"
#include "app/setup.h"
#include "tools/fold_tools.h"

namespace msgx::app {
namespace {

struct InspectArgs {
  std::string flid;
  std::int64_t at = -1;
  bool json = false;
};

int Print(const std::optional<Flight>& f, const AirportZone& zone, const InspectArgs& args) {
  if (!f) {
    std::cout << "flight " << args.flid << " not found\n";
    return 1;
  }
  if (args.json) {
    std::cout << FlightJson(*f, zone) << "\n";
    return 0;
  }
  std::cout << "FLID: " << f->flid << "\nversion: " << f->version << "\n";
  for (const auto& [name, v] : f->data.fields) {
    std::string s;
    AppendValueJson(v, zone, &s);
    std::cout << name << ": " << s << "\n";
  }
  for (const auto& [name, entries] : f->data.lists) {
    for (const Fields& e : entries) {
      std::string s;
      AppendFieldsJson(e, zone, &s);
      std::cout << name << ": " << s << "\n";
    }
  }
  return 0;
}

int RunInspect(const GlobalOptions& global, const InspectArgs& args) {
  Result<Config> config = LoadAndInit(global);
  if (!config.ok()) return 2;
  if (args.at >= 0) {
    auto scratch = ScratchFold::Open(*config, ScratchDirFor(*config, "inspect"));
    if (!scratch.ok()) {
      std::cerr << "msgx inspect: " << scratch.status().ToString() << "\n";
      return 2;
    }
    if (Status s = (*scratch)->Run(args.at, {}, nullptr); !s.ok()) {
      std::cerr << "msgx inspect: " << s.ToString() << "\n";
      return 2;
    }
    auto f = (*scratch)->store().GetFlight(args.flid);
    if (!f.ok()) {
      std::cerr << "msgx inspect: " << f.status().ToString() << "\n";
      return 2;
    }
    return Print(*f, (*scratch)->zone(), args);
  }
  auto tz = TimeZone::Load(config->airport_timezone);
  if (!tz.ok()) {
    std::cerr << "msgx inspect: " << tz.status().message() << "\n";
    return 2;
  }
  const TimeZoneAirportZone zone(*tz);
  auto live = StateStore::Open(config->state_dir + "/state", {false, true});
  if (!live.ok()) {
    std::cerr << "msgx inspect: " << live.status().ToString() << "\n";
    return 2;
  }
  auto f = (*live)->GetFlight(args.flid);
  if (!f.ok()) {
    std::cerr << "msgx inspect: " << f.status().ToString() << "\n";
    return 2;
  }
  return Print(*f, zone, args);
}

}  // namespace

void RegisterInspect(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* cmd = root.add_subcommand("inspect", "Show state: one flight now or as of an offset");
  CLI::App* flight = cmd->add_subcommand("flight", "One flight by FLID");
  cmd->require_subcommand(1);
  auto args = std::make_shared<InspectArgs>();
  flight->add_option("flid", args->flid, "the flight's FLID")->required();
  flight->add_option("--at", args->at, "as of this log offset (refolds in a scratch directory)");
  flight->add_flag("--json", args->json, "print canonical JSON");
  flight->callback([&global, exit_code, args] { *exit_code = RunInspect(global, *args); });
}

}  // namespace msgx::app
