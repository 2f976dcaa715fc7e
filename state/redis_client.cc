#include "state/redis_client.h"

#include <hiredis/hiredis.h>

#include <charconv>
#include <regex>

namespace msgx {
namespace {

RedisValue Copy(const redisReply* r) {
  RedisValue v;
  switch (r->type) {
    case REDIS_REPLY_STRING:
      v.type = RedisValue::Type::kString;
      v.str.assign(r->str, static_cast<size_t>(r->len));
      break;
    case REDIS_REPLY_STATUS:
      v.type = RedisValue::Type::kStatus;
      v.str.assign(r->str, static_cast<size_t>(r->len));
      break;
    case REDIS_REPLY_INTEGER:
      v.type = RedisValue::Type::kInteger;
      v.integer = r->integer;
      break;
    case REDIS_REPLY_ARRAY:
      v.type = RedisValue::Type::kArray;
      for (size_t i = 0; i < r->elements; ++i) v.elements.push_back(Copy(r->element[i]));
      break;
    default:
      v.type = RedisValue::Type::kNil;
  }
  return v;
}

timeval ToTimeval(std::chrono::milliseconds ms) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(ms.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((ms.count() % 1000) * 1000);
  return tv;
}

}  // namespace

ErrorClass RedisReplyErrorClass(std::string_view reply) {
  static constexpr std::string_view kOutages[] = {
      "LOADING",    "BUSY",     "READONLY",    "MASTERDOWN", "MISCONF",   "OOM",
      "NOREPLICAS", "TRYAGAIN", "CLUSTERDOWN", "NOAUTH",     "WRONGPASS", "NOPERM"};
  auto is_outage_word = [](std::string_view s) {
    for (std::string_view w : kOutages) {
      if (s.substr(0, w.size()) == w &&
          (s.size() == w.size() || s[w.size()] == ' ' || s[w.size()] == ':')) {
        return true;
      }
    }
    return false;
  };
  if (is_outage_word(reply)) return ErrorClass::kInfra;
  // A script's error wraps the command's: "ERR Error running script (call to
  // f_…): @user_script:1: OOM command not allowed …".
  if (reply.substr(0, 3) == "ERR" && reply.find("script") != std::string_view::npos) {
    for (std::size_t at = reply.find(' '); at != std::string_view::npos;
         at = reply.find(' ', at + 1)) {
      if (is_outage_word(reply.substr(at + 1))) return ErrorClass::kInfra;
    }
  }
  return ErrorClass::kInternal;
}

Result<std::unique_ptr<RedisClient>> RedisClient::Create(const std::string& url,
                                                         std::chrono::milliseconds timeout) {
  static const std::regex kRe(R"(^redis://(?::([^@]*)@)?([^:/@]+)(?::(\d{1,5}))?(?:/(\d+))?/?$)");
  std::smatch m;
  if (!std::regex_match(url, m, kRe)) {
    return Status::Config("redis.url: \"" + url + "\" is not redis://[:password@]host[:port][/db]");
  }
  int port = m[3].matched ? std::stoi(m[3].str()) : 6379;
  int db = m[4].matched ? std::stoi(m[4].str()) : 0;
  return std::unique_ptr<RedisClient>(new RedisClient(m[2].str(), port, m[1].str(), db, timeout));
}

RedisClient::RedisClient(std::string host, int port, std::string password, int db,
                         std::chrono::milliseconds timeout)
    : host_(std::move(host)),
      port_(port),
      password_(std::move(password)),
      db_(db),
      timeout_(timeout),
      endpoint_(host_ + ":" + std::to_string(port_)) {}

RedisClient::~RedisClient() { Drop(); }

void RedisClient::Drop() {
  if (ctx_ != nullptr) redisFree(ctx_);
  ctx_ = nullptr;
}

Status RedisClient::EnsureConnected() {
  if (ctx_ != nullptr) return Status::Ok();
  ctx_ = redisConnectWithTimeout(host_.c_str(), port_, ToTimeval(timeout_));
  if (ctx_ == nullptr || ctx_->err != 0) {
    std::string why = ctx_ != nullptr ? ctx_->errstr : "out of memory";
    Drop();
    return Status::Infra("redis " + endpoint_ + ": " + why);
  }
  redisSetTimeout(ctx_, ToTimeval(timeout_));
  if (!password_.empty()) {
    auto r = Command({"AUTH", password_});
    if (!r.ok()) return r.status();
  }
  if (db_ != 0) {
    auto r = Command({"SELECT", std::to_string(db_)});
    if (!r.ok()) return r.status();
  }
  return Status::Ok();
}

Result<RedisValue> RedisClient::Command(const std::vector<std::string>& args) {
  Status s = EnsureConnected();
  if (!s.ok()) return s;
  std::vector<const char*> argv;
  std::vector<size_t> lens;
  argv.reserve(args.size());
  lens.reserve(args.size());
  for (const auto& a : args) {
    argv.push_back(a.data());
    lens.push_back(a.size());
  }
  auto* reply = static_cast<redisReply*>(
      redisCommandArgv(ctx_, static_cast<int>(argv.size()), argv.data(), lens.data()));
  if (reply == nullptr) {
    std::string why = ctx_->errstr;
    Drop();  // reconnect on the next call
    return Status::Infra("redis " + endpoint_ + ": " + why);
  }
  std::unique_ptr<redisReply, void (*)(void*)> guard(reply, freeReplyObject);
  if (reply->type == REDIS_REPLY_ERROR) {
    std::string err(reply->str, static_cast<size_t>(reply->len));
    if (RedisReplyErrorClass(err) == ErrorClass::kInfra) {
      return Status::Infra("redis " + endpoint_ + ": " + err);
    }
    return Status::Internal("redis " + endpoint_ + " (" + (args.empty() ? "" : args[0]) +
                            "): " + err);
  }
  return Copy(reply);
}

}  // namespace msgx
