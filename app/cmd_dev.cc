// `msgx dev up|down|env|kafka|load`: local PostgreSQL, Redis and a
// Kafka-protocol broker for trying msgx out (tools/dev_services.h;
// docs/operations.md#local-services-msgx-dev), and the corpus loader
// (tools/corpus_loader.h).
//
//   up [--pg-port N] [--redis-port N] [--mailbox postgresql|mariadb]
//      [--mariadb-port N]               start what is not running; exit 0
//                                       (--mailbox mariadb: the mailbox on a
//                                       local MariaDB, which `env` then names)
//   down [--purge]                      stop what up started (--purge: and
//                                       delete dev.dir)
//   env                                 print `export MSGX_…=…` lines; exit 1
//                                       if the services are not up
//   kafka [--dir D] [--brokers N]       the broker process `up` detaches
//   load [--corpus DIR]                 corpus → the dev mailbox
//
// dev.dir (MSGX_DEV_DIR) says where; topics come from kafka.topics.*.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "app/command.h"
#include "app/data_dir.h"
#include "app/setup.h"
#include "tools/corpus_loader.h"
#include "tools/dev_kafka.h"
#include "tools/dev_services.h"

namespace msgx::app {
namespace {

std::string SelfExe() {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("msgx") : p.string();
}

// The installed share/msgx/corpus, else the source tree's tests/corpus/sis
// (tools/CMakeLists.txt; app/data_dir.h).
std::string DefaultCorpus() { return DataDir("corpus", MSGX_DEFAULT_CORPUS_DIR); }

struct DevFlags {
  int pg_port = 0;
  int redis_port = 0;
  std::string mailbox = "postgresql";
  int mariadb_port = 0;
  bool purge = false;
  std::string kafka_dir;
  int brokers = 1;
  std::string corpus = DefaultCorpus();
};

DevOptions OptionsFrom(const Config& config, const DevFlags& flags) {
  DevOptions o;
  o.dir = config.dev_dir;
  o.pg_port = flags.pg_port;
  o.redis_port = flags.redis_port;
  o.mailbox = flags.mailbox;
  o.mariadb_port = flags.mariadb_port;
  o.self_exe = SelfExe();
  o.topics = {config.topic_msg, config.topic_schd, config.topic_ref, config.topic_progress};
  return o;
}

}  // namespace

void RegisterDev(CLI::App& root, const GlobalOptions& global, int* exit_code) {
  CLI::App* dev = root.add_subcommand("dev", "Local services for trying msgx out");
  dev->require_subcommand(1);
  auto flags = std::make_shared<DevFlags>();

  CLI::App* up = dev->add_subcommand("up", "Start local PostgreSQL, Redis and Kafka (mock)");
  up->add_option("--pg-port", flags->pg_port, "PostgreSQL port (default: last used, or free)");
  up->add_option("--redis-port", flags->redis_port, "Redis port (default: last used, or free)");
  up->add_option("--mailbox", flags->mailbox, "Where the mailbox lives: postgresql or mariadb")
      ->check(CLI::IsMember({"postgresql", "mariadb"}))
      ->capture_default_str();
  up->add_option("--mariadb-port", flags->mariadb_port,
                 "MariaDB port with --mailbox mariadb (default: last used, or free)");
  up->callback([&global, exit_code, flags] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    DevServices services(OptionsFrom(*config, *flags));
    Status s = services.Up(std::cout);
    if (!s.ok()) std::cerr << "msgx dev up: " << s.ToString() << "\n";
    *exit_code = s.ok() ? 0 : (s.error_class() == ErrorClass::kConfig ? 2 : 1);
  });

  CLI::App* down = dev->add_subcommand("down", "Stop what `msgx dev up` started");
  down->add_flag("--purge", flags->purge, "Also delete dev.dir and its data");
  down->callback([&global, exit_code, flags] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    DevServices services(OptionsFrom(*config, *flags));
    Status s = services.Down(std::cout, flags->purge);
    if (!s.ok()) std::cerr << "msgx dev down: " << s.ToString() << "\n";
    *exit_code = s.ok() ? 0 : 1;
  });

  CLI::App* env = dev->add_subcommand("env", "Print export lines for the dev services");
  env->callback([&global, exit_code, flags] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    Result<std::string> exports = DevServices(OptionsFrom(*config, *flags)).EnvExports();
    if (!exports.ok()) {
      std::cerr << "msgx dev env: " << exports.status().message() << "\n";
      *exit_code = 1;
      return;
    }
    std::cout << *exports;
    *exit_code = 0;
  });

  CLI::App* kafka = dev->add_subcommand("kafka", "Run the mock Kafka cluster in the foreground");
  kafka->add_option("--dir", flags->kafka_dir, "Where kafka.bootstrap goes (default dev.dir)");
  kafka->add_option("--brokers", flags->brokers, "Number of mock brokers")->capture_default_str();
  kafka->callback([&global, exit_code, flags] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    DevOptions o = OptionsFrom(*config, *flags);
    if (!flags->kafka_dir.empty()) o.dir = flags->kafka_dir;
    std::error_code ec;
    std::filesystem::create_directories(o.dir, ec);
    Status s = RunDevKafka(o.dir, o.topics, flags->brokers);
    if (!s.ok()) std::cerr << "msgx dev kafka: " << s.ToString() << "\n";
    *exit_code = s.ok() ? 0 : 1;
  });

  CLI::App* load = dev->add_subcommand("load", "Load the message corpus into the dev mailbox");
  load->add_option("--corpus", flags->corpus, "Directory of SIS XML files")->capture_default_str();
  load->callback([&global, exit_code, flags] {
    Result<Config> config = LoadAndInit(global);
    if (!config.ok()) {
      *exit_code = 2;
      return;
    }
    if (config->mailbox_url.empty()) {
      std::cerr << "msgx dev load: mailbox.url is not configured (eval \"$(msgx dev env)\")\n";
      *exit_code = 2;
      return;
    }
    Result<LoadPlan> plan = LoadCorpus(flags->corpus, config->mailbox_url, config->mailbox_table,
                                       config->airport_timezone, *SystemClock::Default());
    if (!plan.ok()) {
      std::cerr << "msgx dev load: " << plan.status().ToString() << "\n";
      *exit_code = plan.status().error_class() == ErrorClass::kConfig ? 2 : 1;
      return;
    }
    std::cout << "loaded " << plan->rows.size() << " messages into " << config->mailbox_table
              << " (a generated SCHD DNLD creating " << plan->created_flids.size()
              << " flights, then " << plan->rows.size() - 1 << " corpus files); SEQN "
              << plan->rows.front().seqn << ".." << plan->rows.back().seqn << "\n";
    *exit_code = 0;
  });
}

}  // namespace msgx::app
