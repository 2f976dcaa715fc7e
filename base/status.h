// Status: the outcome of an operation that can fail in an expected way.
//
// Errors are values in msgx: a library exception stops at the adapter that
// called the library and becomes a Status. A Status carries a class that
// decides what the caller does with it:
//   - the four decode classes (MALFORMED, PROTOCOL, UNSUPPORTED, CODEC_ERROR;
//     docs/codec.md#error-classes) end a message's processing;
//   - kInfra is an outage of PostgreSQL, Redis, Kafka or the disk: retried
//     for as long as it lasts and never charged to a message
//     (docs/crash-safety.md#outages);
//   - kConfig and kUsage stop the process at start-up;
//   - kInternal is a bug.
//
// Thread-safety: a Status is a value; distinct objects may be used from
// distinct threads without synchronisation.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace msgx {

enum class ErrorClass {
  kOk = 0,
  kMalformed,
  kProtocol,
  kUnsupported,
  kCodecError,
  kNotFound,
  kInfra,
  kConfig,
  kUsage,
  kInternal,
};

// What every refusal of a stale leader's write says (a kInfra whose message
// holds it), whichever store refused it: PostgreSQL's CheckEpoch
// (stream/pg/pg_leadership.h) and the Redis mirror's Lua fence
// (state/redis_mirror.h). LeadershipKeeper::StepDownIfStale looks for it.
inline constexpr std::string_view kStaleEpochMark = "stale epoch";

// The upper-case name used in proc_state.error_class and in logs,
// e.g. "MALFORMED", "CODEC_ERROR", "INFRA".
std::string_view ErrorClassName(ErrorClass c);

// [[nodiscard]]: dropping a Status is a compile warning (an error in CI), the
// way a RocksDB debug build aborts on an unchecked one. Ignore one on purpose
// with `(void)`, and say why beside it.
class [[nodiscard]] Status {
 public:
  // An OK status.
  Status() = default;
  Status(ErrorClass cls, std::string message) : cls_(cls), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status Malformed(std::string m) { return {ErrorClass::kMalformed, std::move(m)}; }
  static Status Protocol(std::string m) { return {ErrorClass::kProtocol, std::move(m)}; }
  static Status Unsupported(std::string m) { return {ErrorClass::kUnsupported, std::move(m)}; }
  static Status CodecError(std::string m) { return {ErrorClass::kCodecError, std::move(m)}; }
  static Status NotFound(std::string m) { return {ErrorClass::kNotFound, std::move(m)}; }
  static Status Infra(std::string m) { return {ErrorClass::kInfra, std::move(m)}; }
  static Status Config(std::string m) { return {ErrorClass::kConfig, std::move(m)}; }
  static Status Usage(std::string m) { return {ErrorClass::kUsage, std::move(m)}; }
  static Status Internal(std::string m) { return {ErrorClass::kInternal, std::move(m)}; }

  bool ok() const { return cls_ == ErrorClass::kOk; }
  ErrorClass error_class() const { return cls_; }
  const std::string& message() const { return message_; }

  // "CLASS: message", or "OK".
  std::string ToString() const;

 private:
  ErrorClass cls_ = ErrorClass::kOk;
  std::string message_;
};

}  // namespace msgx
