#!/usr/bin/env bash
# Mailbox to Kafka acknowledgement (issue 6): throughput and p50/p90/p99
# latency from the mailbox INSERT's commit to the read_committed consumer's
# receive, through the whole `msgx run` (capture, fold, PostgreSQL applier,
# Redis mirror, dispatcher, one Kafka transaction per batch). Runs
# build/bench/msgx_latency_bench (bench/dispatch_latency.cc) three times
# against one msgx: steady RATE_LOW and RATE_HIGH msg/s for SECONDS each, then
# SATURATION rows inserted as fast as possible.
#
# Usage: bash bench/dispatch_latency.sh [RATE_LOW] [RATE_HIGH] [SECONDS] [SATURATION]
#        (defaults 200 1000 10 20000)
# Needs a built msgx and msgx_latency_bench (scripts/build.sh); starts its own
# dev services in MSGX_DEV_DIR (default /var/tmp/msgx-latency), stopped and
# purged at the end. MSGX_PIPELINE_POLL_INTERVAL (default 50ms, the floor msgx accepts) is passed on.
set -euo pipefail
cd "$(dirname "$0")/.."
RATE_LOW=${1:-200}
RATE_HIGH=${2:-1000}
SECONDS_PER_RATE=${3:-10}
SATURATION=${4:-20000}
BUILD=$PWD/${MSGX_BUILD_DIR:-build}
MSGX=$BUILD/app/msgx
TOOL=$BUILD/bench/msgx_latency_bench
POLL=${MSGX_PIPELINE_POLL_INTERVAL:-50ms}
export MSGX_DEV_DIR=${MSGX_DEV_DIR:-/var/tmp/msgx-latency}
WORK=$MSGX_DEV_DIR/bench
MSGX_PID=
cleanup() {
  if [[ -n $MSGX_PID ]]; then
    kill -TERM "$MSGX_PID" 2>/dev/null || true
    wait "$MSGX_PID" 2>/dev/null || true
  fi
  "$MSGX" dev down --purge >/dev/null 2>&1 || true
}
"$MSGX" dev up >/dev/null
trap cleanup EXIT
eval "$("$MSGX" dev env)"
# The zone msgx reads the mailbox's date_received in, from msgx's own
# effective configuration (mailbox.time-zone, else airport.timezone): the
# tool writes the column in it.
ZONE=$("$MSGX" config | awk -F': ' '$1 == "mailbox.time-zone" { m = $2 }
  $1 == "airport.timezone" { a = $2 } END { print (m != "" ? m : a) }')
"$MSGX" migrate >/dev/null
"$MSGX" dev load >/dev/null
rm -rf "$WORK" && mkdir -p "$WORK"
psql_own() { psql "$MSGX_POSTGRES_URL" -XAtq -c "$1"; }
psql_box() { psql "$MSGX_MAILBOX_URL" -XAtq -c "$1"; }

MSGX_STATE_DIR=$WORK/state MSGX_PIPELINE_POLL_INTERVAL=$POLL MSGX_LOG_LEVEL=warn \
  MSGX_HTTP_LISTEN=127.0.0.1:0 "$MSGX" run 2>"$WORK/msgx.log" &
MSGX_PID=$!

# Settled: every mailbox row has its outcome and no event is left unsent.
wait_settled() {
  local rows deadline=$((SECONDS + 120))
  rows=$(psql_box "SELECT count(*) FROM cminmsgs")
  until [[ $(psql_own "SELECT count(*) FROM proc_state") == "$rows" &&
    $(psql_own "SELECT count(*) FROM msg_event_state WHERE state <> 'SENT'") == 0 ]]; do
    if ((SECONDS > deadline)) || ! kill -0 "$MSGX_PID" 2>/dev/null; then
      echo "msgx did not settle; log:" >&2
      tail -20 "$WORK/msgx.log" >&2
      exit 1
    fi
    sleep 0.2
  done
}
wait_settled

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(date -u +%FT%TZ)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg), poll interval $POLL"
# Where the time goes, from msgx's own wall-clock stamps of the rows above
# mailbox id $1 (ms): received_at (the mailbox's date_received, i.e. the
# INSERT transaction's now()) -> enqueued_at (appended to the log by capture)
# -> sent_at (Kafka transaction committed). The fold stamps its decision with
# the record's append time (it is deterministic), so fold, applier, mirror and
# dispatcher share the second span.
stages() {
  psql_own "WITH s AS (SELECT extract(epoch FROM p.enqueued_at - p.received_at) * 1000 AS cap,
      extract(epoch FROM e.sent_at - p.enqueued_at) * 1000 AS out
    FROM proc_state p JOIN msg_event_state e ON e.source_msg_id = p.msg_id AND e.target = 'KAFKA:msg'
    WHERE p.msg_id > $1)
  SELECT format('stages ms         insert->log p50 %s p99 %s;  log->Kafka commit p50 %s p90 %s p99 %s',
    round(percentile_cont(0.5) WITHIN GROUP (ORDER BY cap)::numeric, 1),
    round(percentile_cont(0.99) WITHIN GROUP (ORDER BY cap)::numeric, 1),
    round(percentile_cont(0.5) WITHIN GROUP (ORDER BY out)::numeric, 1),
    round(percentile_cont(0.9) WITHIN GROUP (ORDER BY out)::numeric, 1),
    round(percentile_cont(0.99) WITHIN GROUP (ORDER BY out)::numeric, 1)) FROM s"
}
run_tool() {  # label, then tool arguments
  local label=$1
  shift
  echo "== $label"
  local rc=0 before
  before=$(psql_box "SELECT coalesce(max(cminmsgs_id), 0) FROM cminmsgs")
  "$TOOL" --postgres-url "$MSGX_POSTGRES_URL" --time-zone "$ZONE" "$@" || rc=$?
  ((rc <= 1)) || exit "$rc"
  wait_settled
  stages "$before"
  echo "   events: $(psql_own "SELECT count(*) FROM msg_event WHERE target = 'KAFKA:msg'") KAFKA:msg," \
    "$(psql_own "SELECT count(*) FROM proc_state WHERE state <> 'SUCCEEDED'") outcomes not SUCCEEDED"
}
run_tool "steady $RATE_LOW msg/s" --rate "$RATE_LOW" --warmup "$RATE_LOW" \
  --count $((RATE_LOW * SECONDS_PER_RATE))
run_tool "steady $RATE_HIGH msg/s" --rate "$RATE_HIGH" --warmup "$RATE_HIGH" \
  --count $((RATE_HIGH * SECONDS_PER_RATE))
run_tool "saturation $SATURATION rows" --rate 0 --warmup 0 --count "$SATURATION" --timeout 120
grep -E "\[(error|critical)\]" "$WORK/msgx.log" >&2 || true
