// The HTTP surface against a real mailbox in PostgreSQL, driven by a real
// HTTP client (cpp-httplib's).
#include <gtest/gtest.h>
#include <httplib.h>

#include <fstream>
#include <sstream>

#include "base/metrics.h"
#include "stream/capture/mailbox_schema.h"
#include "stream/service/http_server.h"
#include "tests/support/fixtures.h"
#include "tests/support/servers.h"

namespace msgx {
namespace {

class HttpTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    pg_ = testing::PgServer::Start().release();
    pg_->CreateDatabase("aodb");
    pg_->Psql("aodb", kLocalMailboxDdl);
  }
  static void TearDownTestSuite() {
    delete pg_;
    pg_ = nullptr;
  }

  void SetUp() override {
    auto zone = TimeZone::Load("Asia/Shanghai");
    ASSERT_TRUE(zone.ok());
    zone_ = std::make_unique<TimeZone>(std::move(zone.value()));
    decoder_ = std::make_unique<sis::SisDecoder>(*zone_);
    config_.mailbox_url = pg_->Url("aodb");
    config_.codec_max_bytes = std::int64_t{64} * 1024;
    ingest_ = std::make_unique<MailboxIngest>(config_, decoder_.get(), &clock_);
    HttpEndpoints e;
    e.ingest = ingest_.get();
    e.readiness = [this] {
      Readiness r;
      r.ready = ready_;
      if (!ready_) r.problems = {"not leader", "redis unreachable"};
      return r;
    };
    e.status_json = [] { return std::string("{\"applied\":7}"); };
    auto s = HttpServer::Start("127.0.0.1:0", std::move(e));
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    server_ = std::move(s.value());
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
  }

  std::string Rows() {
    std::string out = pg_->Psql("aodb", "SELECT count(*) FROM cminmsgs");
    return out.substr(0, out.find('\n'));
  }

  static testing::PgServer* pg_;
  Config config_;
  ManualClock clock_{1'796'000'000'000'000};
  std::unique_ptr<TimeZone> zone_;
  std::unique_ptr<sis::SisDecoder> decoder_;
  std::unique_ptr<MailboxIngest> ingest_;
  std::unique_ptr<HttpServer> server_;
  std::unique_ptr<httplib::Client> client_;
  bool ready_ = false;
};
testing::PgServer* HttpTest::pg_ = nullptr;

TEST_F(HttpTest, IngestStoresAMessageAndAnswersItsId) {
  const std::string before = Rows();
  const std::string xml = testing::ReadCorpusFile("FLOP-GTDT-1.xml");
  auto res = client_->Post("/cminmsgs/send", xml, "application/xml");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::string id = res->body.substr(0, res->body.find('\n'));
  EXPECT_EQ(std::to_string(std::stoll(before) + 1), Rows());
  std::string row = pg_->Psql("aodb",
                              "SELECT cminmsgs_status || '|' || cminmsgs_subsystem_type || '|' || "
                              "cminmsgs_subsystem_subtype || '|' || (cminmsgs_clob_msg = $x$" +
                                  xml + "$x$) FROM cminmsgs WHERE cminmsgs_id = " + id);
  EXPECT_EQ(row, "VALID|FLOP|GTDT|true\n");
}

TEST_F(HttpTest, NotXmlIs400AndNothingIsStored) {
  const std::string before = Rows();
  auto res = client_->Post("/cminmsgs/send", "this is not <xml", "text/plain");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(res->body.find("MALFORMED"), std::string::npos) << res->body;
  EXPECT_EQ(Rows(), before);
}

TEST_F(HttpTest, WellFormedButBadMessageIsStoredForTheFoldToExplain) {
  const std::string before = Rows();
  auto res = client_->Post("/cminmsgs/send", "<MSG><BODY/></MSG>", "text/xml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(std::to_string(std::stoll(before) + 1), Rows());
}

TEST_F(HttpTest, GbkBodyIsTranscodedToUtf8BeforeItIsStored) {
  // "定期" in GBK is B6 A8 C6 DA.
  std::string gbk =
      "<?xml version=\"1.0\" encoding=\"GBK\"?><MSG><FDSC>\xB6\xA8\xC6\xDA</FDSC></MSG>";
  auto res = client_->Post("/cminmsgs/send", gbk, "text/plain; charset=GBK");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const std::string id = res->body.substr(0, res->body.find('\n'));
  EXPECT_EQ(pg_->Psql("aodb",
                      "SELECT position('定期' in cminmsgs_clob_msg) > 0 FROM cminmsgs "
                      "WHERE cminmsgs_id = " +
                          id),
            "t\n");
  // Bytes that are not valid in the declared charset are refused.
  auto bad = client_->Post("/cminmsgs/send", "<MSG>\xFF\xFF</MSG>", "text/xml; charset=UTF-8");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  auto unknown = client_->Post("/cminmsgs/send", "<MSG/>", "text/xml; charset=x-martian");
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->status, 415);
}

TEST_F(HttpTest, OverTheLimitIs413AndNothingIsStored) {
  const std::string before = Rows();
  std::string big = "<MSG>" + std::string(size_t{70} * 1024, 'x') + "</MSG>";
  auto res = client_->Post("/cminmsgs/send", big, "application/xml");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 413);
  EXPECT_EQ(Rows(), before);
}

TEST_F(HttpTest, HealthReadinessMetricsAndStatus) {
  auto h = client_->Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  auto r = client_->Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->body, "not leader\nredis unreachable\n");
  ready_ = true;
  r = client_->Get("/readyz");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  client_->Post("/cminmsgs/send", "nope", "text/plain");
  auto m = client_->Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("msgx_ingest_total{result=\"refused\"}"), std::string::npos) << m->body;
  auto s = client_->Get("/status");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->body, "{\"applied\":7}");
}

}  // namespace
}  // namespace msgx
