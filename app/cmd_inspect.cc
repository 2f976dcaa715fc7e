// `msgx inspect flight FLID [--at OFFSET] [--json]` and
// `msgx inspect ref TYPE [KEY] [--at OFFSET] [--json]`: one flight or one
// reference record now (the live state store, opened read-only) or as of a
// log offset (a scratch fold of the log up to OFFSET: time travel,
// docs/fold.md#tools). `ref` without KEY lists the type's keys, one per
// line.
//
// Output: --json prints the canonical JSON (state/flight.h); otherwise one
// "FIELD: value" line per field and list entry. Exit 0 found, 1 not found,
// 2 setup error.
#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command.h"
#include "app/setup.h"
#include "tools/fold_tools.h"

namespace msgx::app {
namespace {

struct InspectArgs {
  std::string flid;      // flight
  std::string ref_type;  // ref
  std::string ref_key;   // ref; empty: list the keys
  std::int64_t at = -1;
  bool json = false;
};

// One "NAME: value" line per field, then per list entry.
void PrintRecord(const Record& r, const AirportZone& zone) {
  for (const auto& [name, v] : r.fields) {
    std::string s;
    AppendValueJson(v, zone, &s);
    std::cout << name << ": " << s << "\n";
  }
  for (const auto& [name, entries] : r.lists) {
    for (const Fields& e : entries) {
      std::string s;
      AppendFieldsJson(e, zone, &s);
      std::cout << name << ": " << s << "\n";
    }
  }
}

int PrintFlight(const StateView& view, const AirportZone& zone, const InspectArgs& args) {
  auto f = view.GetFlight(args.flid);
  if (!f.ok()) {
    std::cerr << "msgx inspect: " << f.status().ToString() << "\n";
    return 2;
  }
  if (!f->has_value()) {
    std::cout << "flight " << args.flid << " not found\n";
    return 1;
  }
  if (args.json) {
    std::cout << FlightJson(**f, zone) << "\n";
    return 0;
  }
  std::cout << "FLID: " << (*f)->flid << "\nversion: " << (*f)->version << "\n";
  PrintRecord((*f)->data, zone);
  return 0;
}

int PrintReference(const StateView& view, const AirportZone& zone, const InspectArgs& args) {
  if (args.ref_key.empty()) {
    auto keys = view.ReferenceKeys(args.ref_type);
    if (!keys.ok()) {
      std::cerr << "msgx inspect: " << keys.status().ToString() << "\n";
      return 2;
    }
    for (const std::string& k : *keys) std::cout << k << "\n";
    if (keys->empty()) std::cout << "no " << args.ref_type << " records\n";
    return keys->empty() ? 1 : 0;
  }
  auto r = view.GetReference(args.ref_type, args.ref_key);
  if (!r.ok()) {
    std::cerr << "msgx inspect: " << r.status().ToString() << "\n";
    return 2;
  }
  if (!r->has_value()) {
    std::cout << args.ref_type << " " << args.ref_key << " not found\n";
    return 1;
  }
  if (args.json) {
    std::cout << ReferenceJson(**r, zone) << "\n";
    return 0;
  }
  std::cout << "type: " << (*r)->type << "\nkey: " << (*r)->key << "\nsource: " << (*r)->source
            << "\nversion: " << (*r)->version << "\n";
  PrintRecord((*r)->data, zone);
  return 0;
}

using Printer = int (*)(const StateView&, const AirportZone&, const InspectArgs&);

// Runs `print` on the live store, or on a scratch fold up to --at.
int RunInspect(const GlobalOptions& global, const InspectArgs& args, Printer print) {
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
    return print((*scratch)->store(), (*scratch)->zone(), args);
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
  return print(**live, zone, args);
}

}  // namespace

void RegisterInspect(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* cmd = root.add_subcommand(
      "inspect", "Show state: one flight or reference record now or as of an offset");
  cmd->require_subcommand(1);
  auto args = std::make_shared<InspectArgs>();
  CLI::App* flight = cmd->add_subcommand("flight", "One flight by FLID");
  flight->add_option("flid", args->flid, "the flight's FLID")->required();
  CLI::App* ref = cmd->add_subcommand("ref", "One reference record by type and key");
  ref->add_option("type", args->ref_type, "the record type (AIRL, ARPT, ...)")->required();
  ref->add_option("key", args->ref_key, "its key; left out: list the type's keys");
  for (CLI::App* sub : {flight, ref}) {
    sub->add_option("--at", args->at, "as of this log offset (refolds in a scratch directory)");
    sub->add_flag("--json", args->json, "print canonical JSON");
  }
  flight->callback(
      [&global, exit_code, args] { *exit_code = RunInspect(global, *args, PrintFlight); });
  ref->callback(
      [&global, exit_code, args] { *exit_code = RunInspect(global, *args, PrintReference); });
}

}  // namespace msgx::app
