// `msgx decode [FILE|-] [--json]`: decodes one SIS message and prints it, or
// its error class and why (docs/codec.md#error-classes). File and stdin
// input are raw bytes, so the prolog's encoding= is honoured
// (docs/codec.md#encoding-rules).
//
// Output: with --json, the canonical JSON of the decoded message
// (codecs/sis_json.h) or {"class":..,"error":..}; without, one summary line
// ("FLOP-ACFT SNDR=AODB SEQN=1243 records=1 identity=...") or
// "MALFORMED: <why>". Exit status: 0 decoded, 1 classified as bad input,
// 2 usage/configuration (unreadable file, bad config, bad time zone).
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <iterator>
#include <optional>

#include "app/command.h"
#include "app/setup.h"
#include "codecs/identity_key.h"
#include "codecs/ignore_rules.h"
#include "codecs/sis_decoder.h"
#include "codecs/sis_json.h"

namespace msgx::app {
namespace {

struct DecodeArgs {
  std::string file = "-";
  bool json = false;
};

std::size_t RecordCount(const sis::DecodedMessage& m) {
  return std::visit([](const auto& b) { return b.records.size(); }, m.body);
}

int RunDecode(const GlobalOptions& global, const DecodeArgs& args) {
  Result<Config> config = LoadAndInit(global);
  if (!config.ok()) return 2;
  Result<TimeZone> zone = TimeZone::Load(config->airport_timezone);
  if (!zone.ok()) {
    std::cerr << "msgx: " << zone.status().message() << "\n";
    return 2;
  }
  Result<sis::IgnoreRules> rules = sis::IgnoreRules::Parse(config->ignore_rules);
  if (!rules.ok()) {
    std::cerr << "msgx: " << rules.status().message() << "\n";
    return 2;
  }
  std::string bytes;
  if (args.file == "-") {
    bytes.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    std::ifstream in(args.file, std::ios::binary);
    if (!in) {
      std::cerr << "msgx decode: cannot read " << args.file << "\n";
      return 2;
    }
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  sis::DecoderOptions options;
  options.max_bytes = config->codec_max_bytes;
  sis::SisDecoder decoder(*zone, options);
  std::optional<std::string> ignored;
  Result<sis::DecodedMessage> msg = Status::Internal("not decoded");
  Result<sis::Envelope> env = decoder.DecodeEnvelope(bytes, sis::InputOrigin::kRawBytes);
  if (env.ok()) {
    // Reported, not acted on: the body is still decoded for inspection.
    ignored = rules->Match(env->meta().type, env->meta().styp);
    msg = decoder.DecodeBody(std::move(env).value());
  } else {
    msg = env.status();
  }
  if (!msg.ok()) {
    if (args.json) {
      std::cout << sis::ErrorToJson(msg.status()) << "\n";
    } else {
      std::cout << msg.status().ToString() << "\n";
    }
    return 1;
  }
  if (args.json) {
    std::cout << sis::ToCanonicalJson(*msg) << "\n";
  } else {
    const sis::Meta& m = msg->meta;
    std::cout << m.type << "-" << m.styp << " SNDR=" << m.sndr << " SEQN=" << m.seqn
              << " DTTM=" << m.dttm << " records=" << RecordCount(*msg)
              << " identity=" << sis::MetaIdentityKey(m, config->identity_include_day_boundary);
    if (ignored) std::cout << " ignored:" << *ignored;
    std::cout << "\n";
  }
  return 0;
}

}  // namespace

void RegisterDecode(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* cmd = root.add_subcommand("decode", "Decode one SIS message, or say its class and why");
  auto args = std::make_shared<DecodeArgs>();
  cmd->add_option("file", args->file, "message file, or - for stdin")->capture_default_str();
  cmd->add_flag("--json", args->json, "print canonical JSON");
  cmd->callback([&global, exit_code, args] { *exit_code = RunDecode(global, *args); });
}

}  // namespace msgx::app
