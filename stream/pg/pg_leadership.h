// PgLeadership: the PostgreSQL half of the single-writer rule
// (docs/commit-protocol.md#single-writer).
//
// TryAcquire() takes a session-level advisory lock on a connection it keeps
// open for as long as it leads. With the lock it grants a new epoch in the
// `pipeline` row: `leader_epoch = leader_epoch + 1`, creating the row on
// first use with this process's log UUID. A `pipeline` row that belongs to
// another log is refused (kConfig): a fresh state.dir pointed at the same
// databases by mistake must not write.
//
// When the leader dies its connection closes and PostgreSQL releases the
// lock, so a waiting successor acquires it on its next try and bumps the
// epoch. Every write of the leader's stages checks its epoch inside its own
// transaction (CheckEpoch), so a stale leader that has not noticed yet
// cannot commit anything.
//
// Thread-safety: not thread-safe; one thread owns it. CheckEpoch is a free
// function usable in any transaction.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <pqxx/pqxx>
#include <string>
#include <string_view>

#include "base/result.h"

namespace msgx {

struct LeadershipAttempt {
  bool leader = false;
  std::int64_t epoch = 0;  // when leader
  std::string holder;      // when not: who holds the lock
};

class PgLeadership {
 public:
  // 0x6d7367786c656164 = "msgxlead".
  static constexpr std::int64_t kLockKey = 0x6d7367786c656164;

  PgLeadership(std::string url, std::string log_uuid, std::string pipeline = "main");
  ~PgLeadership();

  // Non-blocking. kInfra when PostgreSQL is unreachable; kConfig for a
  // pipeline row of another log.
  Result<LeadershipAttempt> TryAcquire();
  // kInfra when the lock connection is gone: leadership is lost.
  Status CheckAlive();
  // Drops the lock (and the connection).
  void Release();

  bool leader() const { return epoch_ > 0; }
  std::int64_t epoch() const { return epoch_; }

 private:
  std::string url_;
  std::string log_uuid_;
  std::string pipeline_;
  std::unique_ptr<pqxx::connection> conn_;
  std::int64_t epoch_ = 0;
};

// How a transaction checks its epoch.
//   kLock  a transaction that writes: a row lock on `pipeline` (FOR KEY
//          SHARE), so no new epoch is granted until it commits (the fence:
//          a takeover locks the row FOR UPDATE first); the leader's own
//          non-key updates of the row do not wait for it;
//   kRead  a transaction that only reads: the epoch as of its read, no lock.
//          A lock would add nothing (a new epoch may come the moment after
//          the commit either way) and would cost a write: a row lock marks
//          the row, so the transaction gets an id and its commit waits for
//          a WAL flush (docs/commit-protocol.md#single-writer).
enum class EpochCheck : std::uint8_t { kLock, kRead };

// Inside a stage's transaction: kInfra kStaleEpochMark (base/status.h) unless `pipeline`'s
// leader_epoch equals `epoch` and its log_uuid equals `log_uuid`; `how` as
// above.
// The statement CheckEpoch runs, for a statement that reads the fence with
// more of the row or inside a larger one: `pipeline`'s leader_epoch and
// log_uuid (CheckFencedRead's columns), then `more_columns` (", col, ..."),
// for `name = $<pipeline_param>`, locked as `how` says.
std::string FenceRowSql(EpochCheck how, int pipeline_param = 1, std::string_view more_columns = {});
Status CheckEpoch(pqxx::dbtransaction& tx, const std::string& pipeline, std::int64_t epoch,
                  const std::string& log_uuid, EpochCheck how = EpochCheck::kLock);

// A fenced read of one statement in one round trip, for reads on the hot
// path (a dispatcher's head): `sql` wrapped as
//   SELECT p.leader_epoch, p.log_uuid, r.* FROM pipeline p
//     LEFT JOIN LATERAL (<sql>) r ON true WHERE p.name = $<pipeline_param>
// One statement has one snapshot, so the epoch it reads and its rows agree,
// as in a transaction that checks the epoch (kRead) and then reads, without
// that transaction's BEGIN, epoch query and COMMIT. `sql`'s rows start at
// column 2; a row whose column 2 is NULL is the one that stands for none
// (docs/commit-protocol.md#single-writer). No ORDER BY: a join ON true can
// only be a nested loop, which yields `sql`'s rows in `sql`'s order, and a
// sort over it held every row (payloads too) until the last had been read.
// SQL does not promise that order, so a caller that needs it checks it
// (Dispatcher::ReadHead sorts the rare result that is not in order).
std::string FencedReadSql(const std::string& sql, int pipeline_param);

// The fence of a FencedReadSql result: as CheckEpoch (`pipeline` names the
// row in the messages).
Status CheckFencedRead(const pqxx::result& r, const std::string& pipeline, std::int64_t epoch,
                       const std::string& log_uuid);

class PgSession;

// Runs `fn` in one transaction of `pg` that first checks the epoch
// (CheckEpoch, `how`): kInfra "not leader" for epoch 0, the fence's kInfra
// when stale (nothing of `fn` is committed), otherwise what PgSession::Run
// says.
Status RunFenced(PgSession* pg, const std::string& pipeline, std::int64_t epoch,
                 const std::string& log_uuid, const std::function<void(pqxx::dbtransaction&)>& fn,
                 EpochCheck how = EpochCheck::kLock);

}  // namespace msgx
