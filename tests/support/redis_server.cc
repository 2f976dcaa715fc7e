// RedisServer (tests/support/servers.h): redis-server as our child, no
// persistence, PR_SET_PDEATHSIG=SIGKILL (it holds nothing worth saving).
#include <gtest/gtest.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "base/subprocess.h"
#include "tests/support/cleanup_registry.h"
#include "tests/support/server_start.h"
#include "tests/support/servers.h"
#include "tests/support/temp_dirs.h"

namespace msgx::testing {
namespace {

namespace fs = std::filesystem;

SpawnOptions RedisCli(int port) {
  SpawnOptions o;
  o.argv = {"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(port), "PING"};
  return o;
}

[[noreturn]] void FailStart(const std::string& what) { FailServerStart("RedisServer", what); }

}  // namespace

struct RedisServer::Impl {
  fs::path root;
  int port = 0;
  pid_t pid = 0;
  int handle = -1;

  Status Launch() {
    SpawnOptions o;
    o.argv = {"redis-server", "--port", std::to_string(port), "--bind",     "127.0.0.1",
              "--save",       "",       "--appendonly",       "no",         "--daemonize",
              "no",           "--dir",  root.string(),        "--loglevel", "warning"};
    o.stdout_path = (root / "redis.log").string();
    o.stderr_path = o.stdout_path;
    o.append_output = true;
    o.parent_death_signal = SIGKILL;
    Result<pid_t> spawned = Spawn(o);
    if (!spawned.ok()) return spawned.status();
    pid = *spawned;
    CleanupRegistry::SetPid(handle, pid);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (std::chrono::steady_clock::now() < deadline) {
      if (std::optional<ExitStatus> gone = PollExit(pid)) {
        pid = 0;
        CleanupRegistry::SetPid(handle, 0);
        Result<std::string> log = ReadFileToString((root / "redis.log").string());
        return Status::Infra("redis-server exited with " + std::to_string(gone->code) + ": " +
                             (log.ok() ? *log : ""));
      }
      Result<CommandOutput> ping = RunCommand(RedisCli(port), "", std::chrono::seconds(5));
      if (ping.ok() && ping->out.find("PONG") != std::string::npos) return Status::Ok();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return Status::Infra("redis-server not answering PING after 20s");
  }

  void Shutdown() {
    if (pid > 0) {
      (void)StopProcess(pid, SIGTERM, std::chrono::seconds(10));
      pid = 0;
      CleanupRegistry::SetPid(handle, 0);
    }
  }

  void Destroy() {
    Shutdown();
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};

std::unique_ptr<RedisServer> RedisServer::Start() {
  auto impl = std::make_unique<Impl>();
  Result<std::string> root = MakeOwnedTempDir("redis", std::nullopt);
  if (!root.ok()) FailStart(root.status().ToString());
  impl->root = *root;
  Impl* raw = impl.get();
  impl->handle = CleanupRegistry::Add([raw] { raw->Destroy(); }, 0, SIGKILL);
  Status launched = LaunchOnFreePort(&raw->port, [raw] { return raw->Launch(); });
  if (!launched.ok()) {
    raw->Destroy();
    CleanupRegistry::Remove(raw->handle);
    FailStart(launched.ToString());
  }
  return std::unique_ptr<RedisServer>(new RedisServer(std::move(impl)));
}

RedisServer::RedisServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RedisServer::~RedisServer() {
  CleanupRegistry::Remove(impl_->handle);
  impl_->Destroy();
}

int RedisServer::port() const { return impl_->port; }

std::string RedisServer::Url() const {
  return "redis://127.0.0.1:" + std::to_string(impl_->port) + "/0";
}

std::string RedisServer::Cli(const std::vector<std::string>& args) const {
  SpawnOptions o;
  o.argv = {"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(impl_->port)};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  Result<CommandOutput> out = RunCommand(o, "", std::chrono::seconds(10));
  return out.ok() ? out->out : "";
}

void RedisServer::Stop() { impl_->Shutdown(); }

void RedisServer::Restart() {
  impl_->Shutdown();
  Status s = impl_->Launch();
  if (!s.ok()) ADD_FAILURE() << "RedisServer::Restart: " << s.ToString();
}

}  // namespace msgx::testing
