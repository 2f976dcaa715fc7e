#!/usr/bin/env bash
# End-to-end throughput of `msgx run` (issue 5): from rows in the mailbox to
# outcomes, events and ref_master committed in PostgreSQL, state in RocksDB
# (fsync on) and flights in Redis. Two modes in the same run, on the same
# services and the same input:
#   batched   the default pipeline (pipeline.batch-max 1000);
#   baseline  pipeline.batch-max 1: one fold batch, one synced RocksDB write,
#             one PostgreSQL transaction and one Redis call per message, the
#             way the systems msgx replaces worked.
# Kafka dispatch is off here (measured by bench/dispatch_latency.sh), unless
# KAFKA=1: then the dev Kafka mock stays configured, and a run ends only when
# every event is also acknowledged by Kafka (each target's outbox is
# delivered to its end): the backlog drain, mailbox to Kafka.
#
# Usage: [STREAM=mixed|changes] [KAFKA=1] [PERF_DATA=FILE] bash bench/e2e.sh [ROWS] [BASELINE_ROWS]
#        (defaults 100000 and 5000)
# PERF_DATA=FILE: the batched run is sampled machine-wide by `perf record
# -a -g` from msgx's start to the end of its drain (every process: msgx's
# threads and PostgreSQL's backends among them), into FILE; read it with
# `perf report -i FILE --sort comm,dso,sym`.
# Needs a built msgx (scripts/build.sh) and starts its own dev services in
# MSGX_DEV_DIR (default /var/tmp/msgx-bench), stopped and purged at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-100000}
BASE_ROWS=${2:-5000}
# STREAM=mixed (default): the corpus's FLOP/AIRL/COUL/STTS messages, most of
# them repeating a value (SUCCEEDED, no change, no event), as in the 1M run.
# STREAM=changes: only FLOP STND/RENO/RUNW/REMC/TRML with the value cycled,
# so nearly every message changes a flight and yields an event.
case ${STREAM:-mixed} in
  mixed) TEMPLATES="type IN ('FLOP','AIRL','COUL','STTS') AND styp <> 'FDEL'" ;;
  changes) TEMPLATES="type = 'FLOP' AND styp IN ('STND','RENO','RUNW','REMC','TRML')" ;;
  *) echo "STREAM must be mixed or changes" >&2; exit 2 ;;
esac
MSGX=$PWD/${MSGX_BUILD_DIR:-build}/app/msgx
export MSGX_DEV_DIR=${MSGX_DEV_DIR:-/var/tmp/msgx-bench}
WORK=$MSGX_DEV_DIR/bench
"$MSGX" dev up >/dev/null
trap '"$MSGX" dev down --purge >/dev/null 2>&1 || true' EXIT
eval "$("$MSGX" dev env)"
"$MSGX" migrate >/dev/null
[[ ${KAFKA:-0} == 1 ]] || unset MSGX_KAFKA_BOOTSTRAP_SERVERS
mkdir -p "$WORK"
psql_own() { psql "$MSGX_POSTGRES_URL" -XAtq -c "$1"; }
psql_box() { psql "$MSGX_MAILBOX_URL" -XAtq -c "$1"; }
# Whether a target still has events Kafka has not acknowledged (KAFKA=1):
# one above its delivered position, found through its partial PENDING index
# (docs/schema.md#indexes-of-the-outbox). EXISTS stops at the first such
# row, so a poll costs the same whatever the backlog; a count would read it
# all on every poll and slow the run it measures.
undelivered_sql() {
  local sql="false" t
  [[ ${KAFKA:-0} == 1 ]] || { echo "$sql"; return; }
  for t in KAFKA:msg KAFKA:schd KAFKA:ref; do
    sql+=" OR EXISTS (SELECT 1 FROM msg_event WHERE target = '$t' AND state = 'PENDING'
      AND event_id > (SELECT coalesce(max(last_event_id), 0) FROM outbox_delivery
      WHERE target = '$t'))"
  done
  echo "$sql"
}

# One input for both modes: the corpus, then generated FLOP/AIRL/COUL/STTS
# rows with fresh SEQNs, kept in a table and copied in per run.
prepare_input() {
  psql_box "TRUNCATE cminmsgs"
  "$MSGX" dev load >/dev/null
  psql_box "DROP TABLE IF EXISTS bench_input;
    CREATE TABLE bench_input AS SELECT cminmsgs_clob_msg AS xml, cminmsgs_subsystem_type AS type,
      cminmsgs_subsystem_subtype AS styp FROM cminmsgs ORDER BY cminmsgs_id;"
}

run_mode() {  # name batch_max rows
  local name=$1 batch=$2 rows=$3
  psql_box "TRUNCATE cminmsgs RESTART IDENTITY;
    INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status)
      SELECT xml, now(), 'VALID' FROM bench_input;
    CREATE TEMP TABLE tpl AS SELECT row_number() OVER () - 1 AS id, xml FROM bench_input
      WHERE $TEMPLATES;
    INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status)
      SELECT regexp_replace(regexp_replace(t.xml, '<SEQN>[0-9]+</SEQN>',
               '<SEQN>' || (200000 + g) || '</SEQN>'),
               '<(STND|RENO|RUNW|REMC|TRML)>([^<]+)</', '<\\1>\\2' || ((g / (SELECT count(*) FROM tpl)) % 5) || '</'),
             now(), 'VALID'
      FROM generate_series(1, $rows) g JOIN tpl t ON t.id = g % (SELECT count(*) FROM tpl);"
  local total last_id
  total=$(psql_box "SELECT count(*) FROM cminmsgs")
  last_id=$(psql_box "SELECT max(cminmsgs_id) FROM cminmsgs")
  psql_own "TRUNCATE proc_state, msg_event, outbox_delivery, ref_master, flight_hst, fold_batch, pipeline, msgx_command"
  redis-cli -u "$MSGX_REDIS_URL" FLUSHALL >/dev/null
  rm -rf "$WORK/state"
  local start end
  start=$(date +%s.%N)
  # schd.flush-period 50ms: the corpus's six schedule events would
  # otherwise wait the default 3 s for their KAFKA:schd batch, and with
  # KAFKA=1 every run would end no sooner than that (a floor of about 4 s
  # under a 100,000-message drain); schedule aggregation is not what this
  # measures.
  MSGX_STATE_DIR=$WORK/state MSGX_PIPELINE_BATCH_MAX=$batch MSGX_PIPELINE_POLL_INTERVAL=50ms \
    MSGX_SCHD_FLUSH_PERIOD=50ms MSGX_LOG_LEVEL=warn MSGX_HTTP_LISTEN=127.0.0.1:0 "$MSGX" run 2>"$WORK/$name.log" &
  local pid=$! perf_pid=""
  if [[ -n ${PERF_DATA:-} && $name == batched ]]; then
    perf record -a -g -F 499 -o "$PERF_DATA" 2>"$WORK/perf.log" &
    perf_pid=$!
  fi
  # One psql and one redis-cli every 0.2 s: the poller shares the 2 cores,
  # so each poll reads a few index entries, not the tables: the outcomes are
  # counted only once the last row's is there (capture appends in mailbox
  # order and the applier applies in log order).
  while :; do
    local done_rows applied mirror unsent
    IFS='|' read -r done_rows applied unsent < <(psql_own "SELECT CASE WHEN EXISTS (SELECT 1
      FROM proc_state WHERE msg_id = $last_id) THEN (SELECT count(*) FROM proc_state) ELSE -1 END,
      (SELECT coalesce(max(applied_offset), -1) FROM pipeline), $(undelivered_sql)")
    mirror=$(redis-cli -u "$MSGX_REDIS_URL" HGET msgx:mirror offset)
    if [[ $done_rows == "$total" && $mirror == "$applied" && $unsent == f ]]; then break; fi
    sleep 0.2
  done
  end=$(date +%s.%N)
  if [[ -n $perf_pid ]]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
  kill -TERM $pid
  wait $pid || true
  local events
  events=$(psql_own "SELECT count(*) FROM msg_event")
  awk -v n="$name" -v r="$total" -v e="$events" -v s="$start" -v t="$end" 'BEGIN {
    d = t - s; printf "%-9s %8d msgs %8d events %8.2f s %10.0f msg/s\n", n, r, e, d, r / d }'
}

prepare_input
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(date -u +%FT%TZ)"
run_mode batched 1000 "$ROWS" | tee "$WORK/result.txt"
run_mode baseline 1 "$BASE_ROWS" | tee -a "$WORK/result.txt"
awk '{ r[$1] = $(NF-1) } END { printf "ratio batched/baseline: %.1fx\n", r["batched"] / r["baseline"] }' \
  "$WORK/result.txt"
