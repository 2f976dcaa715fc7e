#!/usr/bin/env bash
# Script test: events.flight-state end to end (docs/dispatch.md#event-payloads).
# `msgx dev up` in a temporary dev dir, `msgx migrate`, `msgx dev load`, then
# `msgx run` with events.flight-state = omit until every event is delivered.
# Read back from the Kafka mock by kcat (read_committed), every flight event
# lacks the "flight" key and the schedule's events keep it; Redis holds whole
# flights; `msgx status` shows the setting the log recorded, and
# `msgx refold --verify` agrees with what was folded. A second run with the
# default records the change back to full at a later offset.
#
# Usage: event_shape.sh path/to/msgx
set -euo pipefail
MSGX=$(realpath "${1:?usage: $0 path/to/msgx}")

source "$(dirname "$0")/lib/dev_test.sh"
DEV_DIR=$(scratch_dir event-shape)
export MSGX_DEV_DIR=$DEV_DIR
RUN_PID=

cleanup() {
  local rc=$?
  if [[ -n $RUN_PID ]] && alive "$RUN_PID"; then kill -KILL "$RUN_PID" 2>/dev/null || true; fi
  "$MSGX" dev down >/dev/null 2>&1 || true
  if [[ $rc != 0 ]]; then tail -n 30 "$DEV_DIR/run.log" 2>/dev/null >&2 || true; fi
  rm -rf "$DEV_DIR"
  exit "$rc"
}
trap cleanup EXIT

"$MSGX" dev up >/dev/null
eval "$("$MSGX" dev env)"
export MSGX_HTTP_LISTEN=127.0.0.1:0 MSGX_SCHD_FLUSH_PERIOD=50ms
"$MSGX" migrate >/dev/null 2>>"$DEV_DIR/run.log"
"$MSGX" dev load >/dev/null
own() { psql "$MSGX_POSTGRES_URL" -XAtqc "$1"; }
rows=$(psql "$MSGX_MAILBOX_URL" -XAtqc 'SELECT count(*) FROM cminmsgs')

# Runs msgx until every mailbox row has its outcome and every event is
# delivered, then stops it with SIGTERM.
run_until_delivered() {
  "$MSGX" run >>"$DEV_DIR/run.log" 2>&1 &
  RUN_PID=$!
  local done_rows unsent
  for _ in $(seq 1 240); do
    alive "$RUN_PID" || fail "msgx run exited"
    done_rows=$(own 'SELECT count(*) FROM proc_state')
    unsent=$(own "SELECT count(*) FROM msg_event_state WHERE state <> 'SENT'")
    [[ $done_rows == "$rows" && $unsent == 0 ]] && break
    sleep 0.5
  done
  [[ $done_rows == "$rows" ]] || fail "$done_rows of $rows outcomes in proc_state"
  [[ $unsent == 0 ]] || fail "$unsent events not SENT"
  kill -TERM "$RUN_PID"
  wait "$RUN_PID" || fail "msgx run exited $? on SIGTERM"
  RUN_PID=
}

MSGX_EVENTS_FLIGHT_STATE=omit run_until_delivered

consume() {  # topic: one record value per line
  kcat -C -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -t "$1" -X isolation.level=read_committed \
    -o beginning -e -q -f '%s\n'
}
events=$(consume msgx.flight.events)
n=$(grep -c '"event_key"' <<<"$events" || true)
(( n > 0 )) || fail "no flight events in Kafka"
[[ $n == $(own "SELECT count(*) FROM msg_event WHERE target = 'KAFKA:msg'") ]] \
  || fail "$n flight events in Kafka, not the outbox's count"
! grep -q '"flight":' <<<"$events" || fail "a flight event carries its flight under omit"
grep -q '"changes":' <<<"$events" || fail "flight events without their changes"
schedule=$(consume msgx.flight.schedule)
grep -q '"flight":{' <<<"$schedule" || fail "the schedule's events lost their flights: $schedule"
flid=$(grep -o '"flid":"[^"]*"' <<<"$events" | head -1 | cut -d'"' -f4)
mirrored=$(redis-cli -u "$MSGX_REDIS_URL" HGET flightInfo "$flid")
[[ $mirrored == "{"*'"FLID":"'"$flid"'"'* ]] || fail "Redis holds no whole flight $flid: $mirrored"

status=$("$MSGX" status --json)
grep -q '"events.flight-state":"omit"' <<<"$status" || fail "status shows no omit: $status"
"$MSGX" refold --verify >/dev/null 2>>"$DEV_DIR/run.log" || fail "refold --verify under omit"

# Back to the default: the next start records the change.
before=$(grep -o '"since_offset":[0-9-]*' <<<"$status" | head -1)
run_until_delivered
status=$("$MSGX" status --json)
grep -q '"events.flight-state":"full"' <<<"$status" || fail "status shows no full: $status"
after=$(grep -o '"since_offset":[0-9-]*' <<<"$status" | head -1)
[[ $after != "$before" ]] || fail "no new SETTINGS record ($before)"
grep -q 'events.flight-state: omit -> full' "$DEV_DIR/run.log" || fail "the change is not logged"
"$MSGX" refold --verify >/dev/null 2>>"$DEV_DIR/run.log" || fail "refold --verify after the change"
echo "event_shape: OK ($rows rows, $n flight events without their flight)"
