#!/usr/bin/env bash
# Script test: `msgx dev up` in a temporary dev dir, then through the
# printed environment: a Kafka produce + consume with kcat, `SELECT 1` with
# psql, a redis-cli PING; a second `up` finds everything running; `msgx dev
# down` stops it all, and nothing is left running or listening. Cleans up on
# any failure (trap): dev down, then the recorded pids, then the directory.
#
# Usage: dev_roundtrip.sh path/to/msgx
set -euo pipefail
MSGX=$(realpath "${1:?usage: $0 path/to/msgx}")

source "$(dirname "$0")/lib/dev_test.sh"
DEV_DIR=$(scratch_dir dev-roundtrip)
export MSGX_DEV_DIR=$DEV_DIR

cleanup() {
  local rc=$?
  "$MSGX" dev down >/dev/null 2>&1 || true
  for f in kafka.pid redis.pid pg.pid; do
    local pid
    pid=$(cat "$DEV_DIR/$f" 2>/dev/null || true)
    if [[ -n $pid ]] && alive "$pid"; then
      echo "cleanup: killing leftover pid $pid ($f)" >&2
      kill -QUIT "$pid" 2>/dev/null || true
      sleep 1
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$DEV_DIR"
  exit "$rc"
}
trap cleanup EXIT

"$MSGX" dev up
eval "$("$MSGX" dev env)"
[[ $MSGX_DEV_DIR == "$DEV_DIR" ]] || fail "env names another dev dir: $MSGX_DEV_DIR"
for v in MSGX_POSTGRES_URL MSGX_MAILBOX_URL MSGX_REDIS_URL MSGX_KAFKA_BOOTSTRAP_SERVERS \
         MSGX_STATE_DIR; do
  [[ -n ${!v:-} ]] || fail "msgx dev env did not set $v"
done
"$MSGX" config >/dev/null || fail "the printed environment is not valid configuration"

# Kafka: the topics exist; a message goes in and comes back out.
meta=$(kcat -L -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -m 10)
for t in msgx.flight.events msgx.flight.schedule msgx.reference; do
  grep -q "topic \"$t\"" <<<"$meta" || fail "kcat -L does not list $t: $meta"
done
payload="roundtrip-$$-$RANDOM"
echo "$payload" | kcat -P -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -t msgx.flight.events -k FLID1 -m 10
got=$(kcat -C -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -t msgx.flight.events -o beginning -e -q \
  -m 10 -f '%k=%s\n')
[[ $got == *"FLID1=$payload"* ]] || fail "consumed '$got', wanted FLID1=$payload"

# PostgreSQL: both databases answer; the mailbox table exists and is empty.
[[ $(psql "$MSGX_POSTGRES_URL" -XAtc 'SELECT 1') == 1 ]] || fail "SELECT 1 on the own database"
# Checkpoints by time, not by every 1 GB of WAL (docs/operations.md#postgresqls-checkpoints).
[[ $(psql "$MSGX_POSTGRES_URL" -XAtc 'SHOW max_wal_size') == 4GB ]] || fail "max_wal_size is not 4GB"
[[ $(psql "$MSGX_MAILBOX_URL" -XAtc 'SELECT count(*) FROM cminmsgs') == 0 ]] \
  || fail "mailbox table cminmsgs missing or not empty"

# PostgreSQL's processes run with msgx's allocator settings
# (docs/operations.md#postgresqls-allocator): the postmaster's environment,
# which every backend inherits.
pg_env=$(tr '\0' '\n' <"/proc/$(cat "$DEV_DIR/pg.pid")/environ")
for v in MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=67108864; do
  grep -qx "$v" <<<"$pg_env" || fail "the postmaster's environment lacks $v"
done

# Redis.
[[ $(redis-cli -u "$MSGX_REDIS_URL" PING) == PONG ]] || fail "redis PING"

# A second up changes nothing and says so.
again=$("$MSGX" dev up)
[[ $(grep -c 'already running' <<<"$again") == 3 ]] || fail "second up: $again"

pids=$(cat "$DEV_DIR/pg.pid" "$DEV_DIR/redis.pid" "$DEV_DIR/kafka.pid")
pg_port=$(cat "$DEV_DIR/pg.port")
redis_port=$(cat "$DEV_DIR/redis.port")
kafka_port=${MSGX_KAFKA_BOOTSTRAP_SERVERS##*:}

"$MSGX" dev down

for pid in $pids; do
  # A process reported stopped may take a moment to leave the process table
  # on a loaded machine.
  for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
  ! alive "$pid" || fail "pid $pid still running after dev down"
done
for port in "$pg_port" "$redis_port" "$kafka_port"; do
  ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || fail "port $port still listening"
done
! "$MSGX" dev env >/dev/null 2>&1 || fail "dev env still prints settings after down"
echo "dev_roundtrip: OK"
