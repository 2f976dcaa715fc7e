// `msgx status [--json]` (docs/operations.md#status): the status document of
// stream/service/status_model.h, built here from the stores read-only (so it
// works while `msgx run` runs), with the live fields ("service", "stages")
// taken from the running service's /status on http.listen when it answers.
// A source that cannot be read is reported as unavailable, with why, and the
// rest is still shown; the exit status is then 1 (0 when every configured
// source answered).
#include <httplib.h>
#include <rapidjson/document.h>

#include <CLI/CLI.hpp>
#include <iostream>

#include "app/command.h"
#include "app/setup.h"
#include "stream/service/http_server.h"
#include "stream/service/status_model.h"

namespace msgx::app {
namespace {

// The running service's /status, parsed; a null value when none answers.
rapidjson::Document FetchLive(const Config& c) {
  rapidjson::Document live;
  auto address = ParseListen(c.http_listen);
  if (!address.ok()) return live;
  std::string host = address->host;
  if (host.empty() || host == "0.0.0.0") host = "127.0.0.1";
  httplib::Client client(host, address->port);
  client.set_connection_timeout(1, 0);
  client.set_read_timeout(10, 0);
  auto res = client.Get("/status");
  if (!res || res->status != 200) return live;
  live.Parse(res->body.c_str());
  if (live.HasParseError()) live.SetNull();
  return live;
}

}  // namespace

void RegisterStatus(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = root.add_subcommand("status", "Offsets, outcomes, lag, outbox and stages");
  cmd->add_flag("--json", *json, "One JSON object");
  cmd->callback([&global, exit_code, json] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    rapidjson::Document doc = BuildStatus(*config, nullptr);
    MergeLiveFields(FetchLive(*config), &doc);
    std::cout << (*json ? ToJson(doc) + "\n" : ToTable(doc));
    *exit_code = AllSourcesAnswered(doc) ? 0 : 1;
  });
}

}  // namespace msgx::app
