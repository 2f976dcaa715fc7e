// RedisClient: a small synchronous Redis connection (hiredis 0.14).
//
// Every call returns a value or an error Status classed at this adapter
// (docs/operations.md#error-classes):
//   - kInfra, an outage: connection refused, reset or timed out, and every
//     error reply that says the server, not the command, is at fault
//     (RedisReplyErrorClass below);
//   - kInternal, a bug: any other error reply (-ERR …, -WRONGTYPE …), since
//     msgx only sends commands it knows to be well-formed.
// After an I/O error the connection is re-established on the next call, so
// an outage heals by retrying.
//
// Thread-safety: not thread-safe; one client per thread.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

struct redisContext;

namespace msgx {

// A Redis reply, copied out of hiredis.
struct RedisValue {
  enum class Type { kNil, kString, kInteger, kArray, kStatus };
  Type type = Type::kNil;
  std::string str;  // kString, kStatus
  long long integer = 0;
  std::vector<RedisValue> elements;  // kArray
};

// The class of an error reply by its first word: LOADING, BUSY, READONLY,
// MASTERDOWN, MISCONF, OOM, NOREPLICAS, TRYAGAIN, CLUSTERDOWN, NOAUTH … are
// kInfra (the server is loading, busy, a replica, cannot persist, is full,
// lacks replicas, is resharding, or wants credentials it was not given);
// anything else kInternal. A script error that carries one of them ("ERR
// Error running script …: OOM …") counts as that one.
ErrorClass RedisReplyErrorClass(std::string_view reply);

class RedisClient {
 public:
  // Parses redis://[:password@]host[:port][/db]; connects lazily.
  static Result<std::unique_ptr<RedisClient>> Create(
      const std::string& url, std::chrono::milliseconds timeout = std::chrono::milliseconds(5000));
  ~RedisClient();
  RedisClient(const RedisClient&) = delete;
  RedisClient& operator=(const RedisClient&) = delete;

  // Sends one command given as binary-safe arguments.
  Result<RedisValue> Command(const std::vector<std::string>& args);

  const std::string& endpoint() const { return endpoint_; }

 private:
  RedisClient(std::string host, int port, std::string password, int db,
              std::chrono::milliseconds timeout);
  Status EnsureConnected();
  void Drop();

  std::string host_;
  int port_;
  std::string password_;
  int db_;
  std::chrono::milliseconds timeout_;
  std::string endpoint_;
  redisContext* ctx_ = nullptr;
};

}  // namespace msgx
