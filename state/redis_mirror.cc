#include "state/redis_mirror.h"

#include "base/status.h"

namespace msgx {
namespace {

// KEYS: hash, meta. ARGV: uuid, first, last, generation, epoch, then (op,
// flid, json) triples with op "S" (set) or "D" (delete). An epoch below the
// one the mirror holds is a stale leader's: refused, nothing written.
constexpr const char* kApplyScript = R"lua(
local epoch = tonumber(ARGV[5])
if epoch > 0 and tonumber(redis.call('HGET', KEYS[2], 'epoch') or '0') > epoch then
  return 'stale'
end
local uuid = redis.call('HGET', KEYS[2], 'log_uuid')
if not uuid then return 'uninitialized' end
if uuid ~= ARGV[1] then return 'foreign' end
local off = tonumber(redis.call('HGET', KEYS[2], 'offset'))
local first = tonumber(ARGV[2])
local last = tonumber(ARGV[3])
if off >= last then return 'already' end
if off < first - 1 then return 'behind' end
if off > first - 1 then return 'overlap' end
for i = 6, #ARGV, 3 do
  if ARGV[i] == 'S' then
    redis.call('HSET', KEYS[1], ARGV[i + 1], ARGV[i + 2])
  else
    redis.call('HDEL', KEYS[1], ARGV[i + 1])
  end
end
redis.call('HSET', KEYS[2], 'offset', ARGV[3], 'generation', ARGV[4])
if epoch > 0 then redis.call('HSET', KEYS[2], 'epoch', ARGV[5]) end
return 'applied'
)lua";

// KEYS: hash, meta, rebuild. ARGV: uuid, offset, generation, epoch.
constexpr const char* kCommitRebuildScript = R"lua(
local epoch = tonumber(ARGV[4])
if epoch > 0 and tonumber(redis.call('HGET', KEYS[2], 'epoch') or '0') > epoch then
  return 'stale'
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('RENAME', KEYS[3], KEYS[1])
else
  redis.call('DEL', KEYS[1])
end
redis.call('HSET', KEYS[2], 'log_uuid', ARGV[1], 'offset', ARGV[2], 'generation', ARGV[3])
if epoch > 0 then redis.call('HSET', KEYS[2], 'epoch', ARGV[4]) end
return 'ok'
)lua";

}  // namespace

std::string_view ApplyOutcomeName(ApplyOutcome o) {
  switch (o) {
    case ApplyOutcome::kApplied:
      return "applied";
    case ApplyOutcome::kAlreadyApplied:
      return "already-applied";
    case ApplyOutcome::kBehind:
      return "behind";
    case ApplyOutcome::kOverlap:
      return "overlap";
    case ApplyOutcome::kUninitialized:
      return "uninitialized";
    case ApplyOutcome::kForeignLog:
      return "foreign-log";
    case ApplyOutcome::kStaleEpoch:
      return "stale-epoch";
  }
  return "?";
}

std::string RedisMirror::StaleText() const {
  return "redis: " + std::string(kStaleEpochMark) + " " + std::to_string(epoch_) +
         ": the mirror was written by a newer leader";
}

RedisMirror::RedisMirror(RedisClient* client, std::string log_uuid)
    : client_(client), log_uuid_(std::move(log_uuid)) {}

Result<MirrorPosition> RedisMirror::Position() {
  auto r = client_->Command({"HMGET", kMetaKey, "log_uuid", "offset", "generation"});
  if (!r.ok()) return r.status();
  MirrorPosition p;
  if (r->type != RedisValue::Type::kArray || r->elements.size() != 3) {
    return Status::Internal("redis: unexpected HMGET reply for msgx:mirror");
  }
  const auto& e = r->elements;
  if (e[0].type != RedisValue::Type::kString) return p;  // not initialized
  p.initialized = true;
  p.log_uuid = e[0].str;
  try {
    p.offset = e[1].type == RedisValue::Type::kString ? std::stoll(e[1].str) : -1;
    p.generation = e[2].type == RedisValue::Type::kString ? std::stoll(e[2].str) : 0;
  } catch (const std::exception&) {
    return Status::Internal("redis: msgx:mirror holds a non-numeric offset or generation");
  }
  return p;
}

Result<ApplyOutcome> RedisMirror::Apply(const MirrorBatch& batch) {
  std::vector<std::string> args{"EVAL",
                                kApplyScript,
                                "2",
                                kHashKey,
                                kMetaKey,
                                log_uuid_,
                                std::to_string(batch.first),
                                std::to_string(batch.last),
                                std::to_string(batch.generation),
                                std::to_string(epoch_)};
  args.reserve(args.size() + batch.changes.size() * 3);
  for (const auto& c : batch.changes) {
    args.emplace_back(c.json ? "S" : "D");
    args.push_back(c.flid);
    args.push_back(c.json ? *c.json : std::string());
  }
  auto r = client_->Command(args);
  if (!r.ok()) return r.status();
  const std::string& s = r->str;
  if (s == "applied") return ApplyOutcome::kApplied;
  if (s == "already") return ApplyOutcome::kAlreadyApplied;
  if (s == "behind") return ApplyOutcome::kBehind;
  if (s == "overlap") return ApplyOutcome::kOverlap;
  if (s == "uninitialized") return ApplyOutcome::kUninitialized;
  if (s == "foreign") return ApplyOutcome::kForeignLog;
  if (s == "stale") return ApplyOutcome::kStaleEpoch;
  return Status::Internal("redis: unexpected mirror script reply \"" + s + "\"");
}

Status RedisMirror::BeginRebuild() {
  auto r = client_->Command({"DEL", kRebuildKey});
  return r.ok() ? Status::Ok() : r.status();
}

Status RedisMirror::AddRebuildChunk(const std::vector<MirrorChange>& flights) {
  if (flights.empty()) return Status::Ok();
  std::vector<std::string> args{"HSET", kRebuildKey};
  args.reserve(2 + flights.size() * 2);
  for (const auto& f : flights) {
    args.push_back(f.flid);
    args.push_back(f.json.value_or(""));
  }
  auto r = client_->Command(args);
  return r.ok() ? Status::Ok() : r.status();
}

Status RedisMirror::CommitRebuild(std::int64_t offset, std::int64_t generation) {
  auto r = client_->Command({"EVAL", kCommitRebuildScript, "3", kHashKey, kMetaKey, kRebuildKey,
                             log_uuid_, std::to_string(offset), std::to_string(generation),
                             std::to_string(epoch_)});
  if (!r.ok()) return r.status();
  if (r->str == "stale") return Status::Infra(StaleText());
  return Status::Ok();
}

}  // namespace msgx
