// What a running `msgx run` says about itself: /status and `msgx status`
// agree, and /healthz and /readyz answer from the first second, with the
// reason while it waits.
#include <gtest/gtest.h>
#include <httplib.h>
#include <rapidjson/document.h>
#include <signal.h>

#include <chrono>
#include <pqxx/pqxx>
#include <set>
#include <string>
#include <vector>

#include "base/subprocess.h"
#include "tests/support/pipeline_fixture.h"

namespace msgx {
namespace {

using std::chrono::seconds;
using testing::GetSoon;
using testing::PipelineTest;
using testing::ReadyzOnceItSays;

// Compares two status documents: the same keys everywhere, and the same
// values except the stages' counters and states, which move between calls.
void ExpectSameStatus(const rapidjson::Value& a, const rapidjson::Value& b,
                      const std::string& path) {
  ASSERT_EQ(a.GetType(), b.GetType()) << path;
  if (!a.IsObject()) {
    const bool volatile_field = path.rfind("/stages/", 0) == 0;
    if (!volatile_field) {
      EXPECT_TRUE(a == b) << path;
    }
    return;
  }
  std::set<std::string> ka, kb;
  for (auto m = a.MemberBegin(); m != a.MemberEnd(); ++m) ka.insert(m->name.GetString());
  for (auto m = b.MemberBegin(); m != b.MemberEnd(); ++m) kb.insert(m->name.GetString());
  EXPECT_EQ(ka, kb) << path;
  for (const std::string& k : ka) {
    std::string sub = path;
    sub += "/";
    sub += k;
    if (kb.count(k)) ExpectSameStatus(a[k.c_str()], b[k.c_str()], sub);
  }
}

// /status and `msgx status --json` are one document: on a quiesced pipeline
// they have the same keys and the same values.
TEST_F(PipelineTest, StatusFromHttpAndTheCliAgree) {
  const std::int64_t rows = LoadMailbox(0);
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(port.ok());
  const std::string listen = "MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port);
  const pid_t pid = StartMsgx({listen});
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();
  httplib::Client http("127.0.0.1", *port);
  http.set_read_timeout(30, 0);
  auto res = http.Get("/status");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  rapidjson::Document served;
  served.Parse(res->body.c_str());
  ASSERT_FALSE(served.HasParseError()) << res->body;
  SpawnOptions so;
  so.argv = {MSGX_BINARY, "status", "--json"};
  so.extra_env = EnvWith({listen});
  auto cli = RunCommand(so, "", seconds(60));
  ASSERT_TRUE(cli.ok());
  EXPECT_EQ(cli->status.code, 0) << cli->out << cli->err;
  rapidjson::Document printed;
  printed.Parse(cli->out.c_str());
  ASSERT_FALSE(printed.HasParseError()) << cli->out;
  ExpectSameStatus(served, printed, "");
  // What the document holds, read against the stores themselves.
  EXPECT_TRUE(printed["service"]["running"].GetBool());
  {
    pqxx::connection c(pg_->Url("aodb"));
    pqxx::nontransaction nt(c);
    EXPECT_EQ(printed["mailbox"]["max_id"].GetInt64(),
              nt.exec1("SELECT max(cminmsgs_id) FROM cminmsgs")[0].as<std::int64_t>());
  }
  EXPECT_EQ(printed["fold"]["lag"].GetInt64(), 0);
  EXPECT_EQ(printed["mirror"]["lag"].GetInt64(), 0);
  EXPECT_EQ(printed["postgres"]["lag"].GetInt64(), 0);
  EXPECT_EQ(printed["postgres"]["applied_offset"].GetInt64(),
            rows);  // offset 0 is the SETTINGS record
  std::int64_t outcomes = 0;
  for (auto m = printed["outcomes"].MemberBegin(); m != printed["outcomes"].MemberEnd(); ++m) {
    if (m->value.IsInt64()) outcomes += m->value.GetInt64();
  }
  EXPECT_EQ(outcomes, OwnCount("SELECT count(*) FROM proc_state"));
  for (const char* stage : {"capture", "intake", "fold", "mirror", "applier", "dispatch KAFKA:msg",
                            "dispatch KAFKA:schd", "dispatch KAFKA:ref"}) {
    ASSERT_TRUE(printed["stages"].HasMember(stage)) << stage;
    EXPECT_NE(std::string(printed["stages"][stage]["state"].GetString()), "failed") << stage;
  }
  EXPECT_EQ(printed["outbox"]["KAFKA:msg"]["pending"].GetInt64(), 0);
  StopMsgx(pid);
}

// Health from the first second: a second process waiting for the state.dir
// lock, and a process started while PostgreSQL is down, each answer
// /healthz 200 at once and /readyz 503 with the reason, and stop cleanly.
TEST_F(PipelineTest, AWaitingProcessAnswersHealthAndSaysWhyItIsNotReady) {
  const std::int64_t rows = LoadMailbox(0);
  const pid_t leader = StartMsgx();
  ASSERT_TRUE(WaitSettled(rows, seconds(120))) << Log();  // it holds the locks

  auto standby_port = FreeLoopbackPort();
  ASSERT_TRUE(standby_port.ok());
  const pid_t standby = StartMsgx({"MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*standby_port)});
  auto health = GetSoon(*standby_port, "/healthz", seconds(10));
  ASSERT_TRUE(health) << Log();
  EXPECT_EQ(health->status, 200);
  // Until it has tried the lock once.
  const auto [why_status, why] = ReadyzOnceItSays(*standby_port, "state.dir lock", 100);
  EXPECT_EQ(why_status, 503);
  EXPECT_NE(why.find("waiting for the state.dir lock"), std::string::npos) << why;
  ASSERT_EQ(::kill(standby, SIGTERM), 0);
  auto standby_exit = WaitForExit(standby, seconds(30));
  ASSERT_TRUE(standby_exit.ok());
  EXPECT_EQ(standby_exit->code, 0);
  StopMsgx(leader);

  // PostgreSQL unreachable at start-up: waiting for leadership, and saying so.
  auto closed = FreeLoopbackPort();
  auto port = FreeLoopbackPort();
  ASSERT_TRUE(closed.ok() && port.ok());
  const pid_t lonely = StartMsgx(
      {"MSGX_HTTP_LISTEN=127.0.0.1:" + std::to_string(*port),
       "MSGX_POSTGRES_URL=postgresql://127.0.0.1:" + std::to_string(*closed) + "/nowhere"});
  auto alive = GetSoon(*port, "/healthz", seconds(10));
  ASSERT_TRUE(alive) << Log();
  EXPECT_EQ(alive->status, 200);
  // Until the keeper has tried once.
  const auto [not_ready_status, not_ready_body] = ReadyzOnceItSays(*port, "unreachable", 50);
  EXPECT_EQ(not_ready_status, 503);
  EXPECT_NE(not_ready_body.find("not leading: PostgreSQL unreachable"), std::string::npos)
      << not_ready_body;
  ASSERT_EQ(::kill(lonely, SIGTERM), 0);
  auto lonely_exit = WaitForExit(lonely, seconds(30));
  ASSERT_TRUE(lonely_exit.ok());
  EXPECT_EQ(lonely_exit->code, 0);
}

}  // namespace
}  // namespace msgx
