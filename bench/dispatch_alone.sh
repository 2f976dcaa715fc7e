#!/usr/bin/env bash
# The dispatcher alone, with and without the progress record (issue 20;
# docs/performance.md#the-progress-record-of-exactly-once-delivery-issue-20):
# msgx_bench's BM_DispatchAlone (bench/dispatch_bench.cc) drains EVENTS
# PENDING KAFKA:msg events from a real PostgreSQL outbox to librdkafka's mock
# cluster, RUNS times each way, interleaved (with, without, then without,
# with, ...: each pair starts with the other one) after one warm-up run
# that is not counted, each run on a freshly loaded outbox and a fresh mock
# cluster. Prints each run's events/s and its seconds in the Kafka
# transactions and the progress read and its mean milliseconds per batch
# outside Kafka in the first and the last tenth of its batches, and the head
# query's own time, buffers and index (EXPLAIN ANALYZE) after 5% and after
# 65% of the events were SENT, then per way the median and the spread
# (min..max).
#
# With MSGX_BENCH_COMPARE=overlap the two ways are instead the SENT update
# overlapping the next batch (the default) and the serial one
# (MSGX_BENCH_DISPATCH_SERIAL=1), both with the progress record
# (docs/performance.md#the-sent-update-overlaps-the-next-batch).
#
# Usage: bash bench/dispatch_alone.sh [EVENTS] [RUNS]   (defaults 200000 3)
# Needs a built msgx and msgx_bench (scripts/build.sh); starts its own dev
# services (`msgx dev up`: only its PostgreSQL is used) in a temporary
# dev.dir, stopped and removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
EVENTS=${1:-200000}
RUNS=${2:-3}
COMPARE=${MSGX_BENCH_COMPARE:-progress}
BUILD=$PWD/${MSGX_BUILD_DIR:-build}
MSGX=$BUILD/app/msgx
BENCH=$BUILD/bench/msgx_bench

while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^MSGX_' || true)
DEV_DIR=$(mktemp -d /tmp/msgx-bench-dispatch-XXXXXX)
chmod 755 "$DEV_DIR"
export MSGX_DEV_DIR=$DEV_DIR
cleanup() {
  "$MSGX" dev down >/dev/null 2>&1 || true
  rm -rf "$DEV_DIR"
}
trap cleanup EXIT
"$MSGX" dev up >/dev/null
eval "$("$MSGX" dev env)"
"$MSGX" migrate >/dev/null 2>&1

echo "events: $EVENTS per run; machine: $(nproc) cores," \
  "$(lscpu | sed -n 's/^Model name: *//p'), $(free -g | awk '/Mem:/ {print $2}') GiB;" \
  "$(date -u +%FT%TZ); load average $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A rates
way_names=("without the progress record" "with the progress record   ")
[[ $COMPARE == overlap ]] && way_names=("serial SENT update    " "overlapped SENT update")
run() {  # way 1: with the record (or overlapped), 0: without (or serial)
  local rate detail progress=$1 serial=()
  if [[ $COMPARE == overlap ]]; then
    progress=1
    (($1 == 0)) && serial=(MSGX_BENCH_DISPATCH_SERIAL=1)
  fi
  read -r rate detail < <(env "${serial[@]}" MSGX_BENCH_POSTGRES_URL="$MSGX_POSTGRES_URL" \
    MSGX_BENCH_DISPATCH_EVENTS="$EVENTS" "$BENCH" \
    --benchmark_filter="BM_DispatchAlone/progress:$progress/" --benchmark_format=json 2>/dev/null |
    jq -re '.benchmarks[0] | if .error_occurred then error(.error_message) else
      "\(.items_per_second | round) \(.real_time / 1000 * 10 | round / 10) s, \(.transactions)" +
      " transactions: \(.publish_s * 10 | round / 10) s in them, \(.reconcile_s * 100 | round / 100) s" +
      " reading the progress; per batch outside Kafka \(.pg_ms_first * 10 | round / 10) ms in the" +
      " first tenth, \(.pg_ms_last * 10 | round / 10) ms in the last; the head query" +
      " \(.head_ms_early * 10 | round / 10) ms (\(.head_buffers_early) buffers) at" +
      " \(.events / 20 | round) SENT, \(.head_ms_late * 10 | round / 10) ms" +
      " (\(.head_buffers_late) buffers) at \(.events * 13 / 20 | round) SENT, by" +
      " \(.label // "?")" end')
  rates[$1]+="$rate "
  echo "${way_names[$1]}  $rate events/s  ($detail; load average $(cut -d' ' -f1-3 /proc/loadavg))"
}
# The first run after `msgx dev up` is slow whichever way it runs (a cold
# PostgreSQL): one more run first, not counted.
run 1 && echo "   (warm-up, not counted)" && rates[1]=
for ((i = 0; i < RUNS; i++)); do
  if ((i % 2 == 0)); then run 1 && run 0; else run 0 && run 1; fi
done
summary() {  # label, rates
  local sorted
  mapfile -t sorted < <(tr ' ' '\n' <<<"$2" | grep . | sort -n)
  echo "$1: median ${sorted[$((${#sorted[@]} / 2))]} events/s," \
    "spread ${sorted[0]}..${sorted[-1]} (${sorted[*]})"
}
summary "${way_names[1]}" "${rates[1]}"
summary "${way_names[0]}" "${rates[0]}"
