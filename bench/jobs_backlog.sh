#!/usr/bin/env bash
# The jobs against big tables (issue 15; docs/performance.md, "The jobs
# against a large backlog"), through the whole `msgx run` on the services of
# `msgx dev up`:
#
#  1. Sent-event compaction while a dispatcher runs. Two fresh environments
#     that differ in one thing: ROWS synthetic SENT events in msg_event, sent
#     30 days ago (due: the event-retention job deletes them) or 1 hour ago
#     (kept: same table size, nothing to delete). In each, msgx_latency_bench
#     inserts SATURATION mailbox rows as fast as it can, timed to start just
#     before the job's next run, and reports the dispatcher's throughput and
#     commit-to-Kafka latency; beside it the job's progress is sampled from
#     /metrics (msgx_job_rows_total{job_name="event-retention"}) every 0.5 s.
#  2. The processed mark and the proc-state archive against a backlog of
#     ROWS terminal outcomes whose mailbox rows are unmarked: synthetic
#     proc_state rows and mailbox rows with negative ids (below capture's
#     watermark, so never captured; the jobs select by their own indexes and
#     never look at the ids' sign), decided 2 days ago. The rates come from
#     the two jobs' msgx_job_rows_total, sampled every 0.5 s.
#
# Usage: bash bench/jobs_backlog.sh [ROWS] [SATURATION]   (defaults 1000000 30000)
#        BENCH_PHASES="compaction jobs" (default both) picks the parts;
#        BENCH_KEEP=DIR keeps msgx's log and the samples of the last part.
# Needs a built msgx and msgx_latency_bench (scripts/build.sh). Starts its own
# dev services in MSGX_DEV_DIR (default /var/tmp/msgx-jobs-bench), stopped
# and purged at the end. Prints figures only; it asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-1000000}
SATURATION=${2:-30000}
BUILD=$PWD/${MSGX_BUILD_DIR:-build}
MSGX=$BUILD/app/msgx
TOOL=$BUILD/bench/msgx_latency_bench
export MSGX_DEV_DIR=${MSGX_DEV_DIR:-/var/tmp/msgx-jobs-bench}
WORK=$MSGX_DEV_DIR/bench
MSGX_PID=
SAMPLER_PID=
stop_msgx() {
  if [[ -n $SAMPLER_PID ]]; then kill "$SAMPLER_PID" 2>/dev/null || true; wait "$SAMPLER_PID" 2>/dev/null || true; fi
  SAMPLER_PID=
  if [[ -n $MSGX_PID ]]; then
    kill -TERM "$MSGX_PID" 2>/dev/null || true
    wait "$MSGX_PID" 2>/dev/null || true
  fi
  MSGX_PID=
}
cleanup() {
  stop_msgx
  if [[ -n ${BENCH_KEEP:-} && -d $WORK ]]; then mkdir -p "$BENCH_KEEP" && cp -r "$WORK"/*.log "$WORK"/*.samples "$BENCH_KEEP"/ 2>/dev/null || true; fi
  "$MSGX" dev down --purge >/dev/null 2>&1 || true
}
trap cleanup EXIT
psql_own() { psql "$MSGX_POSTGRES_URL" -XAtq -c "$1"; }
psql_box() { psql "$MSGX_MAILBOX_URL" -XAtq -c "$1"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

fresh_env() {
  "$MSGX" dev down --purge >/dev/null 2>&1 || true
  "$MSGX" dev up >/dev/null
  eval "$("$MSGX" dev env)"
  "$MSGX" migrate >/dev/null
  "$MSGX" dev load >/dev/null
  rm -rf "$WORK" && mkdir -p "$WORK"
}

start_msgx() {  # extra environment assignments
  PORT=$(free_port)
  env MSGX_STATE_DIR="$WORK/state" MSGX_PIPELINE_POLL_INTERVAL=50ms MSGX_LOG_LEVEL=warn \
    MSGX_HTTP_LISTEN=127.0.0.1:$PORT "$@" "$MSGX" run 2>>"$WORK/msgx.log" &
  MSGX_PID=$!
}

# One series' value in an exposition on stdin (0 when absent).
value_of() { awk -v m="$1" '$1 == m {print $2; f=1} END {if (!f) print 0}'; }
# A metric's value now.
metric() { curl -fsS "http://127.0.0.1:$PORT/metrics" 2>/dev/null | value_of "$1"; }

# Samples `metric` names every 0.5 s into FILE as "unix_seconds v1 v2 ...".
sample() {  # file, metric names
  local file=$1
  shift
  (while true; do
    local line
    line=$(date +%s.%N)
    local body
    body=$(curl -fsS "http://127.0.0.1:$PORT/metrics" 2>/dev/null || true)
    for m in "$@"; do
      line+=" $(value_of "$m" <<<"$body")"
    done
    echo "$line" >>"$file"
    sleep 0.5
  done) &
  SAMPLER_PID=$!
}

# From a sample file and a column (2 = first metric): the span from the first
# sample above the first value to the first at its final value, its rows and
# rows/s.
rate() {  # file, column
  awk -v c="$2" 'NR == 1 {v0 = $c} {t[NR] = $1; v[NR] = $c} END {
      last = v[NR]; for (i = 1; i <= NR; i++) if (v[i] > v0) {s = t[i - 1]; break}
      for (i = 1; i <= NR; i++) if (v[i] == last) {e = t[i]; break}
      n = last - v0; if (n <= 0 || e <= s) {print "no rows"; exit}
      printf "%d rows in %.1f s = %.0f rows/s (start %.1f, end %.1f)\n", n, e - s, n / (e - s), s, e}' "$1"
}

wait_settled() {
  local rows deadline=$((SECONDS + 300))
  rows=$(psql_box "SELECT count(*) FROM cminmsgs WHERE cminmsgs_id > 0")
  until [[ $(psql_own "SELECT count(*) FROM proc_state WHERE msg_id > 0") == "$rows" &&
    $(psql_own "SELECT count(*) FROM msg_event_state WHERE state <> 'SENT'") == 0 ]]; do
    if ((SECONDS > deadline)) || ! kill -0 "$MSGX_PID" 2>/dev/null; then
      echo "msgx did not settle; log:" >&2
      tail -20 "$WORK/msgx.log" >&2
      exit 1
    fi
    sleep 0.2
  done
}

echo "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GiB, $(date -u +%FT%TZ)," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg); rows $ROWS, saturation $SATURATION"

# ---- 1. compaction while the dispatcher runs
compaction() {  # label, sent_at age
  local label=$1 age=$2
  fresh_env
  start_msgx
  wait_settled
  # Inserted once msgx runs, so that the job's first run (at start-up) finds
  # nothing and the next one, a minute later, meets the dispatch below.
  local t0=$SECONDS
  psql_own "INSERT INTO msg_event (event_key, target, partition_key, event_type, state_version,
      payload_json, state, created_at, sent_at, source_msg_id)
    SELECT 'bench:' || g, 'KAFKA:msg', 'FL' || (g % 5000), 'UPSERT', g,
      '{\"flid\":\"FL' || (g % 5000) || '\",\"stnd\":\"' || (g % 300) || '\",\"pad\":\"' ||
        repeat('x', 200) || '\"}', 'SENT', now() - interval '$age', now() - interval '$age', g
    FROM generate_series(1, $ROWS) g"
  psql_own "VACUUM ANALYZE msg_event"
  echo "== compaction: $label ($ROWS SENT events sent $age ago; insert + vacuum $((SECONDS - t0)) s;" \
    "msg_event $(psql_own "SELECT pg_size_pretty(pg_total_relation_size('msg_event'))"))"
  sample "$WORK/retention.samples" 'msgx_job_rows_total{job_name="event-retention"}'
  # Start inserting about 2 s before the job's next run.
  local next
  next=$(metric 'msgx_job_next_run_seconds{job_name="event-retention"}')
  while awk -v n="$next" -v t="$(date +%s.%N)" 'BEGIN {exit !(n - t > 2)}'; do sleep 0.2; done
  local start
  start=$(date +%s.%N)
  "$TOOL" --postgres-url "$MSGX_POSTGRES_URL" --rate 0 --warmup 0 --count "$SATURATION" \
    --timeout 300 || true
  local end
  end=$(date +%s.%N)
  wait_settled
  sleep 2
  # Wait for the job to finish its run, if it is deleting.
  local deadline=$((SECONDS + 600))
  while [[ $(psql_own "SELECT count(*) FROM (SELECT 1 FROM msg_event WHERE state = 'SENT'
      AND sent_at < now() - interval '7 days' LIMIT 1) x") != 0 ]] && ((SECONDS < deadline)); do sleep 1; done
  stop_msgx
  printf '   dispatch window %.1f..%.1f\n' "$start" "$end"
  echo "   event-retention: $(rate "$WORK/retention.samples" 2)"
  echo "   left in msg_event: $(psql_own "SELECT count(*) FROM msg_event WHERE event_key LIKE 'bench:%'") synthetic rows"
}
PHASES=${BENCH_PHASES:-compaction jobs}
if [[ $PHASES == *compaction* ]]; then
  compaction "control, nothing due" "1 hour"
  compaction "compaction running" "30 days"
fi
[[ $PHASES == *jobs* ]] || exit 0

# ---- 2. the processed mark and the archive against a backlog
fresh_env
t0=$SECONDS
psql_box "INSERT INTO cminmsgs (cminmsgs_id, cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status)
  SELECT -g, '<MSG>bench</MSG>', now() - interval '2 days', 'VALID' FROM generate_series(1, $ROWS) g"
psql_own "INSERT INTO proc_state (msg_id, state, identity_key, updated_at, received_at, enqueued_at,
    log_offset, backfill_next_at)
  SELECT -g, 'SUCCEEDED', 'AODB:' || g, now() - interval '2 days', now() - interval '2 days',
    now() - interval '2 days', NULL, now() - interval '2 days' - (g || ' microseconds')::interval
  FROM generate_series(1, $ROWS) g"
psql_own "VACUUM ANALYZE proc_state"
psql_box "VACUUM ANALYZE cminmsgs"
echo "== processed mark + archive: $ROWS terminal outcomes, mailbox rows unmarked (setup $((SECONDS - t0)) s)"
start_msgx MSGX_PIPELINE_BACKFILL_BACKOFF_MS=1s MSGX_PROC_STATE_ARCHIVE_AFTER=1d
sample "$WORK/jobs.samples" 'msgx_job_rows_total{job_name="processed-mark"}' \
  'msgx_job_rows_total{job_name="proc-state-archive"}'
deadline=$((SECONDS + 1200))
until [[ $(psql_own "SELECT count(*) FROM proc_state WHERE msg_id < 0 AND state = 'ARCHIVED'") == "$ROWS" ]] ||
  ((SECONDS > deadline)); do
  sleep 2
done
sleep 1
stop_msgx
echo "   processed mark: $(rate "$WORK/jobs.samples" 2)"
echo "   archive:        $(rate "$WORK/jobs.samples" 3)"
echo "   mailbox marked: $(psql_box "SELECT count(*) FROM cminmsgs WHERE cminmsgs_id < 0 AND cminmsgs_date_processed IS NOT NULL"),"\
  "archived: $(psql_own "SELECT count(*) FROM proc_state WHERE msg_id < 0 AND state = 'ARCHIVED'")," \
  "in proc_state_hst: $(psql_own "SELECT count(*) FROM proc_state_hst WHERE msg_id < 0")"
grep -E '"level":"(error|critical)"' "$WORK/msgx.log" >&2 || true
