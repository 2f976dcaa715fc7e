// HttpServer: msgx's HTTP surface (docs/operations.md#http), on `http.listen`
// (loopback by default).
//   POST /cminmsgs/send  legacy ingest: 200 with the stored id as text;
//                        400 not XML / bad bytes, 413 over codec.max-bytes,
//                        415 unknown charset, 503 mailbox unreachable.
//                        Nothing is stored unless the answer is 200.
//   GET  /healthz        200 "ok" while the process serves.
//   GET  /readyz         200 when ready, else 503 with one reason per line
//                        (not leader, a service unreachable, a stall).
//   GET  /metrics        Prometheus text (base/metrics.h).
//   GET  /status         the JSON of `msgx status --json`.
//
// Thread-safety: the server runs its own threads; the endpoint callbacks
// are called from them and must be thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "stream/capture/mailbox_ingest.h"

namespace httplib {
class Server;
}

namespace msgx {

struct Readiness {
  bool ready = false;
  std::vector<std::string> problems;
};

struct HttpEndpoints {
  MailboxIngest* ingest = nullptr;           // null: 503 on /cminmsgs/send
  std::function<Readiness()> readiness;      // null: not ready ("starting")
  std::function<std::string()> status_json;  // null: "{}"
};

// "host:port" as http.listen gives it (base/config validates the form).
struct ListenAddress {
  std::string host;
  int port = 0;
};
// kConfig when `listen` is not host:port.
Result<ListenAddress> ParseListen(const std::string& listen);

class HttpServer {
 public:
  // Binds `listen` ("host:port"; port 0 picks a free one) and serves.
  static Result<std::unique_ptr<HttpServer>> Start(const std::string& listen,
                                                   HttpEndpoints endpoints);
  ~HttpServer();  // stops and joins
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
  HttpEndpoints endpoints_;
};

}  // namespace msgx
