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
# OUTAGE=1 (with KAFKA=1): the recovery drain after a Kafka outage. The
# batched run first folds and applies every row with Kafka unreachable
# (kafka.bootstrap-servers on a closed port), so the outbox holds every
# event PENDING; msgx is stopped, started again with Kafka, and the
# "recovery" line times only that second start's drain of the outbox (no
# baseline run).
#
# Usage: [STREAM=mixed|changes] [KAFKA=1 [OUTAGE=1]] [PERF_DATA=FILE] [PG_CPU=1] [CPU_SPLIT=1] bash bench/e2e.sh [ROWS] [BASELINE_ROWS]
#        (defaults 100000 and 5000); MSGX_BUILD_DIR picks the binary (a
#        path relative to the repository, or absolute).
# PERF_DATA=FILE: the batched run is sampled machine-wide by `perf record
# -a -g` from msgx's start to the end of its drain (every process: msgx's
# threads and PostgreSQL's backends among them), into FILE; read it with
# `perf report -i FILE --sort comm,dso,sym`.
# PG_CPU=1: each run also prints the CPU seconds the dev PostgreSQL spent
# from msgx's start until it stopped (every backend, msgx's and the poll's,
# and the server's own processes): steadier than the drain's rate on a
# shared machine when a change is to PostgreSQL's work.
# CPU_SPLIT=1: the batched run also prints, just before msgx is stopped,
# the CPU seconds of each of msgx's threads (by name: a stage's thread is
# named after it), of each live PostgreSQL process (named by its backend
# type and its last statement), of the Kafka mock and of Redis: where a drain's CPU
# went, since every one of them began with the run; and how many rows the
# processed mark has settled so far. On stderr.
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
BUILD_DIR=${MSGX_BUILD_DIR:-build}
[[ $BUILD_DIR == /* ]] || BUILD_DIR=$PWD/$BUILD_DIR
MSGX=$BUILD_DIR/app/msgx
if [[ ${OUTAGE:-0} == 1 && ${KAFKA:-0} != 1 ]]; then echo "OUTAGE=1 needs KAFKA=1" >&2; exit 2; fi
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
  local start end pid perf_pid="" outage_s=""
  if [[ ${OUTAGE:-0} == 1 && $name == batched ]]; then
    # Everything folded and applied while Kafka is unreachable (port 1 on
    # loopback refuses), then stopped: the outbox holds every event. The
    # stalled dispatchers would hold the stop for the whole drain bound
    # (docs/operations.md#stopping), so it is 1 s here.
    start=$(date +%s.%N)
    MSGX_SHUTDOWN_DRAIN_TIMEOUT=1s start_msgx "$name-outage" "$batch" 127.0.0.1:1
    wait_until applied
    end=$(date +%s.%N)
    kill -TERM "$pid"
    wait "$pid" || true
    outage_s=$(awk -v s="$start" -v t="$end" -v x="$(date +%s.%N)" 'BEGIN {
      printf "%.2f s, stopped in %.2f s", t - s, x - t }')
  fi
  local pg_cpu0=""
  [[ ${PG_CPU:-0} != 1 ]] || pg_cpu0=$(pg_cpu)
  start=$(date +%s.%N)
  start_msgx "$name" "$batch"
  if [[ -n ${PERF_DATA:-} && $name == batched ]]; then
    perf record -a -g -F 499 -o "$PERF_DATA" 2>"$WORK/perf.log" &
    perf_pid=$!
  fi
  wait_until delivered
  end=$(date +%s.%N)
  [[ ${KAFKA:-0} != 1 ]] || end=$(drain_end)
  if [[ -n $perf_pid ]]; then kill -INT "$perf_pid"; wait "$perf_pid" || true; fi
  [[ ${CPU_SPLIT:-0} != 1 || $name != batched ]] || cpu_split "$pid" >&2
  kill -TERM "$pid"
  wait "$pid" || true
  if [[ -n $pg_cpu0 ]]; then
    sleep 0.5  # the postmaster reaps msgx's backends
    awk -v n="$name" -v a="$pg_cpu0" -v b="$(pg_cpu)" 'BEGIN {
      printf "%-9s PostgreSQL CPU %.2f s\n", n, b - a }'
  fi
  local events
  events=$(psql_own "SELECT count(*) FROM msg_event")
  if [[ -n $outage_s ]]; then
    local unsent
    unsent=$(psql_own "SELECT count(*) FROM msg_event e WHERE state <> 'SENT' AND NOT EXISTS
      (SELECT 1 FROM outbox_delivery d WHERE d.target = e.target
        AND e.event_id BETWEEN d.first_event_id AND d.last_event_id)")
    awk -v e="$events" -v u="$unsent" -v o="$outage_s" -v s="$start" -v t="$end" 'BEGIN {
      d = t - s; printf "recovery %8d events %8.2f s %10.0f events/s, %d not delivered " \
        "(folded and applied with Kafka down in %s)\n", e, d, e / d, u, o }'
    return
  fi
  awk -v n="$name" -v r="$total" -v e="$events" -v s="$start" -v t="$end" 'BEGIN {
    d = t - s; printf "%-9s %8d msgs %8d events %8.2f s %10.0f msg/s\n", n, r, e, d, r / d }'
}

start_msgx() {  # log_name batch_max [kafka.bootstrap-servers]; sets pid
  local kafka=()
  [[ -z ${3:-} ]] || kafka=("MSGX_KAFKA_BOOTSTRAP_SERVERS=$3")
  # schd.flush-period 50ms: the corpus's six schedule events would
  # otherwise wait the default 3 s for their KAFKA:schd batch, and with
  # KAFKA=1 every run would end no sooner than that (a floor of about 4 s
  # under a 100,000-message drain); schedule aggregation is not what this
  # measures.
  env MSGX_STATE_DIR="$WORK/state" MSGX_PIPELINE_BATCH_MAX="$2" MSGX_PIPELINE_POLL_INTERVAL=50ms \
    MSGX_SCHD_FLUSH_PERIOD=50ms MSGX_LOG_LEVEL=warn MSGX_HTTP_LISTEN=127.0.0.1:0 "${kafka[@]}" \
    "$MSGX" run 2>"$WORK/$1.log" &
  pid=$!
}

# The poll's interval. Each poll starts a psql (and with it a PostgreSQL
# backend) and a redis-cli: five a second were about a tenth of the two
# cores in a drain (docs/performance.md#the-benchs-poll-2026-12-06). With
# KAFKA=1 the end of a drain to Kafka is read from PostgreSQL afterwards
# (drain_end), so that poll need not be frequent; otherwise the poll's time
# is the end.
poll_seconds() { [[ $1 == delivered && ${KAFKA:-0} == 1 ]] && echo 1 || echo 0.2; }

# With KAFKA=1: when the drain ended, in seconds since the epoch: the later
# of the last Kafka commit a dispatcher recorded and the last applied batch
# (whose outcomes may carry no event). The same host's clock as `date`.
drain_end() {
  psql_own "SELECT extract(epoch FROM greatest((SELECT max(sent_at) FROM outbox_delivery),
    (SELECT max(updated_at) FROM pipeline)))"
}

# CPU seconds of the dev PostgreSQL so far: the postmaster's own and its
# reaped children's (/proc/PID/stat utime, stime, cutime, cstime), and its
# live children's.
pg_cpu() {
  local pm
  pm=$(head -1 "$MSGX_DEV_DIR/pg/postmaster.pid")
  {
    awk '{ print $14 + $15 + $16 + $17 }' "/proc/$pm/stat"
    for c in $(pgrep -P "$pm"); do awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || true; done
  } | awk -v hz="$(getconf CLK_TCK)" '{ s += $1 } END { printf "%.2f", s / hz }'
}

# CPU seconds of a /proc/PID/stat or /proc/PID/task/TID/stat (utime + stime).
cpu_of() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "$1" 2>/dev/null; }

# Where the run's CPU went (CPU_SPLIT=1): msgx's threads summed by name, the
# dev PostgreSQL's live processes, the Kafka mock and Redis. Lines "<s> <who>",
# largest first.
cpu_split() {  # msgx_pid
  local t p bt q
  echo "-- CPU seconds since msgx started (CPU_SPLIT)"
  for t in /proc/"$1"/task/*; do
    echo "$(cpu_of "$t/stat") msgx:$(tr ' ' _ <"$t/comm")"
  done | awk '{ c[$2] += $1; s += $1 } END { for (k in c) if (c[k] > 0) printf "%7.2f %s\n", c[k], k;
    printf "%7.2f msgx:TOTAL\n", s }' | sort -rn
  psql_own "SELECT pid, backend_type, regexp_replace(left(query, 60), '\s+', ' ', 'g')
    FROM pg_stat_activity WHERE pid <> pg_backend_pid()" | while IFS='|' read -r p bt q; do
    t=$(cpu_of "/proc/$p/stat") || continue
    [[ -z $t || $t == 0.00 ]] || printf "%7.2f postgres:%s: %s\n" "$t" "$bt" "$q"
  done | sort -rn
  for p in kafka redis; do
    t=$(cpu_of "/proc/$(cat "$MSGX_DEV_DIR/$p.pid")/stat") || continue
    printf "%7.2f %s\n" "$t" "$p"
  done
  # The processed mark runs every pipeline.backfill-backoff-ms (30 s), so a
  # drain usually ends before it has marked anything; with a shorter one its
  # backends' CPU above divides by this.
  echo "$(psql_own "SELECT count(*) FROM proc_state WHERE mark_state IS NOT NULL") rows settled by the processed mark"
}

wait_until() {  # applied | delivered; reads run_mode's total and last_id
  # One psql and one redis-cli a poll: the poller shares the 2 cores, so
  # each poll reads a few index entries, not the tables: the outcomes are
  # counted only once the last row's is there (capture appends in mailbox
  # order and the applier applies in log order).
  while :; do
    local done_rows applied mirror unsent
    IFS='|' read -r done_rows applied unsent < <(psql_own "SELECT CASE WHEN EXISTS (SELECT 1
      FROM proc_state WHERE msg_id = $last_id) THEN (SELECT count(*) FROM proc_state) ELSE -1 END,
      (SELECT coalesce(max(applied_offset), -1) FROM pipeline), $(undelivered_sql)")
    mirror=$(redis-cli -u "$MSGX_REDIS_URL" HGET msgx:mirror offset)
    if [[ $done_rows == "$total" && $mirror == "$applied" ]]; then
      [[ $1 == applied || $unsent == f ]] && return
    fi
    sleep "$(poll_seconds "$1")"
  done
}

prepare_input
echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(date -u +%FT%TZ)"
if [[ ${OUTAGE:-0} == 1 ]]; then  # the recovery drain alone, no baseline
  run_mode batched 1000 "$ROWS"
  exit 0
fi
run_mode batched 1000 "$ROWS" | tee "$WORK/result.txt"
run_mode baseline 1 "$BASE_ROWS" | tee -a "$WORK/result.txt"
awk '{ r[$1] = $(NF-1) } END { printf "ratio batched/baseline: %.1fx\n", r["batched"] / r["baseline"] }' \
  "$WORK/result.txt"
