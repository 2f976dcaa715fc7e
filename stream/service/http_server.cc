#include "stream/service/http_server.h"

#include <httplib.h>

#include <charconv>

#include "base/log.h"
#include "base/metrics.h"

namespace msgx {

Result<ListenAddress> ParseListen(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  ListenAddress a;
  const char* end = listen.data() + listen.size();
  if (colon != std::string::npos) {
    a.host = listen.substr(0, colon);
    auto [p, ec] = std::from_chars(listen.data() + colon + 1, end, a.port);
    if (ec == std::errc() && p == end) return a;
  }
  return Status::Config("http.listen: \"" + listen + "\" is not host:port");
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(const std::string& listen,
                                                      HttpEndpoints endpoints) {
  auto address = ParseListen(listen);
  if (!address.ok()) return address.status();
  const std::string& host = address->host;
  const int want_port = address->port;

  std::unique_ptr<HttpServer> s(new HttpServer());
  s->endpoints_ = std::move(endpoints);
  s->server_ = std::make_unique<httplib::Server>();
  httplib::Server& srv = *s->server_;
  HttpServer* self = s.get();
  const size_t body_limit = self->endpoints_.ingest != nullptr
                                ? static_cast<size_t>(self->endpoints_.ingest->max_bytes()) + 1
                                : size_t{1024} * 1024;
  srv.set_payload_max_length(body_limit);

  srv.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  srv.Get("/readyz", [self](const httplib::Request&, httplib::Response& res) {
    Readiness r;
    if (self->endpoints_.readiness) {
      r = self->endpoints_.readiness();
    } else {
      r.problems.push_back("starting");
    }
    std::string body;
    for (const auto& p : r.problems) body += p + "\n";
    res.status = r.ready ? 200 : 503;
    res.set_content(r.ready ? "ready\n" : body, "text/plain");
  });
  srv.Get("/metrics", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(Metrics::Global().Render(), "text/plain; version=0.0.4");
  });
  srv.Get("/status", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->endpoints_.status_json ? self->endpoints_.status_json() : "{}",
                    "application/json");
  });
  // Made here, so that /metrics has them from the start.
  Counter* stored = Metrics::Global().GetCounter(
      "msgx_ingest_total", "Messages posted to /cminmsgs/send", {{"result", "stored"}});
  Counter* refused = Metrics::Global().GetCounter(
      "msgx_ingest_total", "Messages posted to /cminmsgs/send", {{"result", "refused"}});
  srv.Post("/cminmsgs/send", [self, stored, refused](const httplib::Request& req,
                                                     httplib::Response& res) {
    if (self->endpoints_.ingest == nullptr) {
      res.status = 503;
      res.set_content("ingest is not configured (mailbox.url)\n", "text/plain");
      return;
    }
    const std::string ct = req.get_header_value("Content-Type");
    const bool xml_type = ct.empty() || ct.find("xml") != std::string::npos ||
                          ct.find("text/plain") != std::string::npos;
    if (!xml_type) {
      refused->Add();
      res.status = 415;
      res.set_content("Content-Type must be application/xml, text/xml or text/plain\n",
                      "text/plain");
      return;
    }
    Result<std::int64_t> id = self->endpoints_.ingest->Store(req.body, ct);
    if (id.ok()) {
      stored->Add();
      res.set_content(std::to_string(*id) + "\n", "text/plain");
      Logger("http")->info("{}", WithTrace(std::to_string(*id), "stored by /cminmsgs/send"));
      return;
    }
    refused->Add();
    const Status& st = id.status();
    switch (st.error_class()) {
      case ErrorClass::kMalformed:
        res.status = 400;
        break;
      case ErrorClass::kCodecError:
        res.status = st.message().rfind("message too large", 0) == 0 ? 413 : 415;
        break;
      case ErrorClass::kInfra:
        res.status = 503;
        break;
      default:
        res.status = 500;
    }
    res.set_content(st.ToString() + "\n", "text/plain");
  });
  // Bodies over the limit are cut off by httplib before our handler.
  srv.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.status == 413) res.set_content("message too large (codec.max-bytes)\n", "text/plain");
  });

  if (want_port == 0) {
    s->port_ = srv.bind_to_any_port(host);
  } else {
    s->port_ = srv.bind_to_port(host, want_port) ? want_port : -1;
  }
  if (s->port_ <= 0) return Status::Infra("http.listen: cannot bind " + listen);
  s->thread_ = std::thread([self] { self->server_->listen_after_bind(); });
  return s;
}

HttpServer::~HttpServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace msgx
