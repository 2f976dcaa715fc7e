#!/usr/bin/env bash
# Script test: the quickstart's pipeline on a MariaDB mailbox. `msgx dev up
# --mailbox mariadb` in a temporary dev dir (Debian's mariadbd on a
# throwaway datadir and a free port, beside the dev PostgreSQL, Redis and
# Kafka mock); `msgx dev env` names the mysql:// mailbox and its
# least-privilege account; `msgx migrate`, `msgx dev load` into MariaDB,
# then `msgx run` until every row has its outcome in PostgreSQL, every event
# is SENT, the flights are in Redis and Kafka, and every mailbox row carries
# the processed mark (written through that account), after two kill -9s
# (while capture is part-way, and between a mark batch's mailbox write and
# its settle): nothing lost, nothing twice. The received times are
# read in mailbox.time-zone (not set: airport.timezone, the zone the loader
# writes in), so proc_state.received_at is within minutes of now.
# `msgx refold --verify` agrees; `msgx dev down` stops MariaDB too.
#
# Usage: dev_mariadb.sh path/to/msgx
set -euo pipefail
MSGX=$(realpath "${1:?usage: $0 path/to/msgx}")

source "$(dirname "$0")/lib/dev_test.sh"
DEV_DIR=$(scratch_dir dev-mariadb)
export MSGX_DEV_DIR=$DEV_DIR
RUN_PID=

cleanup() {
  local rc=$?
  if [[ -n $RUN_PID ]] && alive "$RUN_PID"; then kill -KILL "$RUN_PID" 2>/dev/null || true; fi
  "$MSGX" dev down >/dev/null 2>&1 || true
  for f in kafka.pid redis.pid pg.pid mariadb.pid; do
    local pid
    pid=$(cat "$DEV_DIR/$f" 2>/dev/null || true)
    if [[ -n $pid ]] && alive "$pid"; then
      echo "cleanup: killing leftover pid $pid ($f)" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  if [[ $rc != 0 ]]; then tail -n 30 "$DEV_DIR/run.log" 2>/dev/null >&2 || true; fi
  rm -rf "$DEV_DIR"
  exit "$rc"
}
trap cleanup EXIT

"$MSGX" dev up --mailbox mariadb
eval "$("$MSGX" dev env)"
[[ $MSGX_MAILBOX_URL == mysql://msgx:msgx@127.0.0.1:*/aodb ]] \
  || fail "dev env names another mailbox: $MSGX_MAILBOX_URL"
port=$(cat "$DEV_DIR/mariadb.port")
# The mailbox through the account msgx uses (SELECT, INSERT, UPDATE of the
# two mark columns).
mailbox() { mariadb --no-defaults -h 127.0.0.1 -P "$port" -umsgx -pmsgx -N -B aodb -e "$1"; }
[[ $(mailbox 'SELECT count(*) FROM cminmsgs') == 0 ]] || fail "mailbox not empty"
! mailbox 'DELETE FROM cminmsgs' 2>/dev/null || fail "the dev account may DELETE"

again=$("$MSGX" dev up --mailbox mariadb)
grep -q 'mariadb: already running' <<<"$again" || fail "second up: $again"

"$MSGX" migrate >/dev/null
"$MSGX" dev load
rows=$(mailbox 'SELECT count(*) FROM cminmsgs')
(( rows > 100 )) || fail "dev load stored $rows rows"

export MSGX_HTTP_LISTEN=127.0.0.1:0 MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s
# kill -9 twice before the run that finishes: while capture is part-way
# (small batches; the fold's failpoint at mailbox id 40 raises SIGKILL for
# the whole process), then during marking (right after the first batch of
# marks is written to the mailbox, before proc_state settles it).
own() { psql "$MSGX_POSTGRES_URL" -XAtc "$1" 2>/dev/null || echo -1; }
killed_run() {
  local rc=0
  MSGX_TEST_FAILPOINTS=$1 MSGX_PIPELINE_BATCH_MAX=10 timeout 120 "$MSGX" run \
    >>"$DEV_DIR/run.log" 2>&1 || rc=$?
  [[ $rc == 137 ]] || fail "msgx run with $1 exited $rc, not by SIGKILL"
}
killed_run fold.record:40:kill
captured=$(mailbox "SELECT count(*) FROM cminmsgs") # unchanged: capture only reads
[[ $captured == "$rows" ]] || fail "mailbox rows changed: $captured"
killed_run 'mark.after_mailbox:#1:kill'
marked=$(mailbox 'SELECT count(*) FROM cminmsgs WHERE cminmsgs_date_processed IS NOT NULL')
(( marked > 0 )) || fail "the killed run wrote no mark before it died"
settled=$(own "SELECT count(*) FROM proc_state WHERE mark_state IS NOT NULL")
(( marked > settled )) || fail "no mark left unsettled by the kill ($marked marked, $settled settled)"

"$MSGX" run >>"$DEV_DIR/run.log" 2>&1 &
RUN_PID=$!
for _ in $(seq 1 480); do
  alive "$RUN_PID" || fail "msgx run exited"
  done_rows=$(own 'SELECT count(*) FROM proc_state')
  unsent=$(own "SELECT count(*) FROM msg_event_state WHERE state <> 'SENT'")
  unmarked=$(mailbox 'SELECT count(*) FROM cminmsgs WHERE cminmsgs_date_processed IS NULL')
  [[ $done_rows == "$rows" && $unsent == 0 && $unmarked == 0 ]] && break
  sleep 0.5
done
[[ $done_rows == "$rows" ]] || fail "$done_rows of $rows outcomes in proc_state"
[[ $unsent == 0 ]] || fail "$unsent events not SENT"
[[ $unmarked == 0 ]] || fail "$unmarked mailbox rows not marked"
[[ $(own "SELECT count(*) FROM proc_state WHERE mark_state <> 'MARKED' OR mark_state IS NULL") == 0 ]] \
  || fail "marks not settled MARKED: $(own 'SELECT mark_state, count(*) FROM proc_state GROUP BY 1')"
[[ $(mailbox "SELECT count(*) FROM cminmsgs WHERE cminmsgs_status <> 'PROCESSED'") == 0 ]] \
  || fail "mailbox rows without the PROCESSED status"
# An instant: the loader's airport-time reading taken in the airport zone.
skew=$(own "SELECT max(abs(extract(epoch FROM received_at - now())))::int FROM proc_state")
(( skew < 900 )) || fail "proc_state.received_at is ${skew}s from now (zone not applied?)"
flights=$(redis-cli -u "$MSGX_REDIS_URL" HLEN flightInfo)
(( flights > 0 )) || fail "no flights in Redis"
events=$(own "SELECT count(*) FROM msg_event WHERE target = 'KAFKA:msg'")
kafka=$(kcat -C -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -t msgx.flight.events \
  -X isolation.level=read_committed -o beginning -e -q | wc -l)
(( kafka == events && kafka > 0 )) || fail "$kafka records in Kafka for $events events"

kill -TERM "$RUN_PID"
wait "$RUN_PID" || fail "msgx run exited $? on SIGTERM"
RUN_PID=
"$MSGX" refold --verify >/dev/null || fail "refold --verify"

mariadb_pid=$(cat "$DEV_DIR/mariadb.pid")
"$MSGX" dev down
for _ in $(seq 50); do alive "$mariadb_pid" || break; sleep 0.1; done
! alive "$mariadb_pid" || fail "mariadbd $mariadb_pid still running after dev down"
! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || fail "port $port still listening"
echo "dev_mariadb: OK ($rows rows, $flights flights, $kafka Kafka records)"
