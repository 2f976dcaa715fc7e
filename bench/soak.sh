#!/usr/bin/env bash
# A soak: one long step of `msgx bench` at a steady rate, with every job on
# and their windows short enough to come round many times in the run, and a
# sample every SAMPLE seconds of what could grow: msgx's memory (resident,
# anonymous and file-backed, and its stores' parts as /metrics gives them),
# threads and open files, each table msgx owns in PostgreSQL, the state
# directory, and the other servers' memory (docs/performance.md, "A soak").
#
# Usage: bash bench/soak.sh [MINUTES] [RATE] [OUT]   (defaults 30 2k /var/tmp/msgx-soak)
#        SAMPLE=30 (seconds between samples); MAILBOX=postgresql|mariadb;
#        MSGX=<binary> (default the build's msgx);
#        SQL=<statement> run once in msgx's database as soon as its schema
#        exists (an experiment: a setting, an index dropped);
#        PRELOAD=<file of SQL> run by psql in msgx's database after its
#        migrations and before the bench starts, then VACUUM (FREEZE,
#        ANALYZE) of it: a database as months of running leave it (the
#        shadows of millions of archived outcomes), timed into OUT/preload.log.
# The jobs' windows (each overridable by its MSGX_ variable): delivered
# events deleted after 2 min, pending batches pruned after 2 min, settled
# outcomes archived after 2 min and the archive deleted after 4 min.
# Writes OUT/samples.tsv (one line per sample), OUT/threads.tsv (each of
# msgx's threads at each sample: its CPU ticks so far, user and system,
# 100 a second) and OUT/out (the bench's report, with its per-second
# figures). Starts its own dev services in
# OUT/dev, purged at the end (PostgreSQL's log kept as OUT/pg.log). Prints
# figures only; it asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-30}
RATE=${2:-2k}
OUT=${3:-/var/tmp/msgx-soak}
SAMPLE=${SAMPLE:-30}
MSGX=${MSGX:-$PWD/${MSGX_BUILD_DIR:-build}/app/msgx}
export MSGX_DEV_DIR=$OUT/dev
export MSGX_PIPELINE_EVENT_RETENTION=${MSGX_PIPELINE_EVENT_RETENTION:-2m}
export MSGX_PIPELINE_PENDING_RETENTION=${MSGX_PIPELINE_PENDING_RETENTION:-2m}
export MSGX_PROC_STATE_ARCHIVE_AFTER=${MSGX_PROC_STATE_ARCHIVE_AFTER:-2m}
export MSGX_PROC_STATE_HST_RETENTION=${MSGX_PROC_STATE_HST_RETENTION:-4m}

rm -rf "$OUT"
mkdir -p "$OUT"
BENCH_PID=
cleanup() {
  if [[ -n $BENCH_PID ]]; then kill -TERM "$BENCH_PID" 2>/dev/null || true; wait "$BENCH_PID" 2>/dev/null || true; fi
  cp "$MSGX_DEV_DIR/pg.log" "$OUT/pg.log" 2>/dev/null || true
  "$MSGX" dev down --purge >/dev/null 2>&1 || true
}
trap cleanup EXIT

"$MSGX" dev up --mailbox "${MAILBOX:-postgresql}" >/dev/null
eval "$("$MSGX" dev env)"

# The memory (kB) of the processes that `pgrep $@` finds: the sum of their
# proportional sets (Pss), so memory they share (PostgreSQL's buffers) is
# counted once.
pss_of() {
  local total=0 pid kb
  for pid in $(pgrep "$@" || true); do
    kb=$(awk '/^Pss:/ {print $2}' "/proc/$pid/smaps_rollup" 2>/dev/null || echo 0)
    total=$((total + ${kb:-0}))
  done
  echo "$total"
}
# msgx's own service: the `msgx run` the bench started (its log names it).
run_pid() { sed -n 's/^msgx run started (pid \([0-9]*\)).*/\1/p' "$OUT/bench.log" | tail -1; }
# The stores' memory as msgx's /metrics gives it (docs/operations.md#memory):
# the block cache's usage, then the memtables and the table readers of the
# log and of the state store; 0s when the scrape fails.
store_memory() {
  local port
  port=$(sed -n 's/.*http on port \([0-9]*\).*/\1/p' "$OUT/out/msgx.log" 2>/dev/null | tail -1)
  curl -fsS --max-time 5 "http://127.0.0.1:${port:-0}/metrics" 2>/dev/null | awk '
    /^msgx_store_block_cache_bytes / {c = $2}
    /^msgx_store_memtables_bytes\{store="log"\}/ {ml = $2}
    /^msgx_store_memtables_bytes\{store="state"\}/ {ms = $2}
    /^msgx_store_table_readers_bytes\{store="log"\}/ {tl = $2}
    /^msgx_store_table_readers_bytes\{store="state"\}/ {ts = $2}
    END {printf "%d\t%d\t%d\t%d\t%d\n", c, ml, ms, tl, ts}' || printf '0\t0\t0\t0\t0\n'
}
# Size in bytes of a directory, 0 when absent.
# (du fails when RocksDB deletes a file while it counts: the count stands.)
du_bytes() {
  local b
  b=$(du -sb "$1" 2>/dev/null | cut -f1) || true
  echo "${b:-0}"
}
TABLES="proc_state proc_state_hst msg_event outbox_delivery fold_batch"
pg_sizes() {
  local t q=""
  for t in $TABLES; do
    q+="SELECT pg_total_relation_size('$t'), (SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = '$t') UNION ALL "
  done
  psql "$MSGX_POSTGRES_URL" -XAtq -F $'\t' -c "${q% UNION ALL }" | paste -sd '\t' -
}

{
  printf 'second\tmsgx_rss_kb\tmsgx_threads\tmsgx_fds\tbench_pss_kb\tkafka_mock_pss_kb\tpostgres_pss_kb\tredis_pss_kb\tmariadb_pss_kb'
  for t in $TABLES; do printf '\t%s_bytes\t%s_rows' "$t" "$t"; done
  printf '\tlog_dir_bytes\tstate_dir_bytes\tcaptured\tproc_state_index_bytes\tmailbox_bytes\tpg_blks_read\tpg_blks_hit'
  printf '\twal_bytes\tbuffers_backend\tbuffers_checkpoint\tbuffers_clean\tidentity_idx_bytes\tidentity_idx_blks_read'
  printf '\tmsgx_rss_anon_kb\tmsgx_rss_file_kb\tblock_cache_bytes\tlog_memtables_bytes\tstate_memtables_bytes'
  printf '\tlog_table_readers_bytes\tstate_table_readers_bytes\tproc_state_dead_rows\tproc_state_autovacuums\n'
} >"$OUT/samples.tsv"
printf 'second\ttid\tthread\tcpu_ticks\n' >"$OUT/threads.tsv"

if [[ -n ${PRELOAD:-} ]]; then
  {
    "$MSGX" migrate
    t0=$(date +%s)
    psql "$MSGX_POSTGRES_URL" -Xq -v ON_ERROR_STOP=1 -f "$PRELOAD"
    t1=$(date +%s)
    psql "$MSGX_POSTGRES_URL" -Xq -v ON_ERROR_STOP=1 -c "VACUUM (FREEZE, ANALYZE)"
    psql "$MSGX_POSTGRES_URL" -Xq -v ON_ERROR_STOP=1 -c "CHECKPOINT"
    echo "preload $((t1 - t0)) s, vacuum and checkpoint $(($(date +%s) - t1)) s"
    psql "$MSGX_POSTGRES_URL" -XAtq -c "SELECT 'proc_state ' || count(*) || ' rows, ' ||
      pg_size_pretty(pg_total_relation_size('proc_state')) FROM proc_state"
  } >"$OUT/preload.log" 2>&1
fi

STEP_SECONDS=$((MINUTES * 60))
"$MSGX" bench --steps "$RATE" --step-seconds "$STEP_SECONDS" --baseline-messages 0 \
  --mailbox "${MAILBOX:-postgresql}" --out "$OUT/out" >"$OUT/bench.log" 2>&1 &
BENCH_PID=$!
START=$(date +%s)
if [[ -n ${SQL:-} ]]; then
  for _ in $(seq 120); do
    psql "$MSGX_POSTGRES_URL" -XAtq -c "SELECT 1 FROM proc_state LIMIT 1" >/dev/null 2>&1 && break
    sleep 1
  done
  psql "$MSGX_POSTGRES_URL" -Xq -v ON_ERROR_STOP=1 -c "$SQL"
fi
while kill -0 "$BENCH_PID" 2>/dev/null; do
  sleep "$SAMPLE"
  pid=$(run_pid)
  # Not started yet, or already stopped by the bench at the end.
  [[ -z $pid || ! -d /proc/$pid ]] && continue
  now=$(($(date +%s) - START))
  # Resident (kB: all, anonymous, file-backed) and threads, in one read.
  read -r rss anon file threads < <(awk '/^VmRSS:/ {r = $2} /^RssAnon:/ {a = $2}
    /^RssFile:/ {f = $2} /^Threads:/ {t = $2} END {print r + 0, a + 0, f + 0, t + 0}' \
    "/proc/$pid/status" 2>/dev/null || echo 0 0 0 0)
  fds=$({ ls "/proc/$pid/fd" 2>/dev/null || true; } | wc -l)
  # One query for PostgreSQL's figures: the fold's last batch, the size of
  # proc_state's indexes, the database's block reads (from the page cache
  # or the disk) and buffer hits, the WAL written, the buffers written by
  # backends, the checkpointer and the background writer (all counted since
  # the server started), proc_state's identity index: its size and block
  # reads, and proc_state's dead rows and autovacuum runs.
  pg=$(psql "$MSGX_POSTGRES_URL" -XAtq -F $'\t' -c "
    SELECT (SELECT COALESCE(max(last_offset), 0) FROM fold_batch),
           pg_indexes_size('proc_state'), d.blks_read, d.blks_hit,
           pg_current_wal_lsn() - '0/0', w.buffers_backend, w.buffers_checkpoint, w.buffers_clean,
           COALESCE(pg_relation_size(to_regclass('proc_state_identity_key_idx')), 0),
           COALESCE((SELECT idx_blks_read FROM pg_statio_user_indexes
                     WHERE indexrelname = 'proc_state_identity_key_idx'), 0),
           COALESCE(t.n_dead_tup, 0), COALESCE(t.autovacuum_count, 0)
      FROM pg_stat_database d CROSS JOIN pg_stat_bgwriter w
      LEFT JOIN pg_stat_user_tables t ON t.relname = 'proc_state'
     WHERE d.datname = current_database()" 2>/dev/null ||
    printf '0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0')
  IFS=$'\t' read -r captured indexes blks_read blks_hit wal backend checkpoint clean idx idx_read dead vacuums <<<"$pg"
  mailbox=0
  if [[ $MSGX_MAILBOX_URL == postgres* ]]; then
    mailbox=$(psql "$MSGX_MAILBOX_URL" -XAtq -c "SELECT pg_total_relation_size('cminmsgs')" 2>/dev/null || echo 0)
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' \
    "$now" "$rss" "$threads" "$fds" \
    "$(pss_of -f "bench --steps $RATE ")" "$(pss_of -f 'dev kafka')" "$(pss_of -x postgres)" \
    "$(pss_of -x redis-server)" "$(pss_of -x mariadbd)" "$(pg_sizes)" \
    "$(du_bytes "$MSGX_DEV_DIR/state/log")" "$(du_bytes "$MSGX_DEV_DIR/state")" "$captured" \
    "$indexes" "$mailbox" "$blks_read" "$blks_hit" "$wal" "$backend" "$checkpoint" "$clean" \
    "$idx" "$idx_read" "$anon" "$file" "$(store_memory)" "$dead" "$vacuums" >>"$OUT/samples.tsv"
  for task in /proc/"$pid"/task/*; do
    # comm may hold spaces; utime and stime are fields 14 and 15 of stat,
    # counted after the parenthesised comm.
    stat=$(cat "$task/stat" 2>/dev/null) || continue
    rest=${stat##*) }
    read -r -a f <<<"$rest"
    printf '%s\t%s\t%s\t%s\n' "$now" "${task##*/}" "$(cat "$task/comm" 2>/dev/null)" \
      "$((f[11] + f[12]))" >>"$OUT/threads.tsv"
  done
done
wait "$BENCH_PID" && rc=0 || rc=$?
BENCH_PID=
# Charts of the samples (gnuplot, as the bench's own charts; skipped when
# it is missing): memory, and the sizes of what msgx keeps.
if command -v gnuplot >/dev/null; then
  gnuplot >"$OUT/gnuplot.log" 2>&1 <<EOF || echo "charts not drawn: see $OUT/gnuplot.log"
set terminal png size 800,500
set grid
set key top left
set datafile separator '\t'
set xlabel 'minutes into the step'
set ylabel 'MiB'
m(c) = column(c) / 1024.0
b(c) = column(c) / 1048576.0
set output '$OUT/soak-memory.png'
set title 'msgx soak at $RATE msg/s: memory'
plot '$OUT/samples.tsv' skip 1 using (\$1/60):(m(2)) with lines lw 2 title 'msgx run (RSS)', \
  '' skip 1 using (\$1/60):(m(7)) with lines lw 2 title 'PostgreSQL (PSS)', \
  '' skip 1 using (\$1/60):(m(6)) with lines lw 2 title 'Kafka mock (PSS)', \
  '' skip 1 using (\$1/60):(m(5)) with lines lw 2 title 'the bench (PSS)'
set output '$OUT/soak-storage.png'
set title 'msgx soak at $RATE msg/s: what msgx keeps'
plot '$OUT/samples.tsv' skip 1 using (\$1/60):(b(10)) with lines lw 2 title 'proc\_state', \
  '' skip 1 using (\$1/60):(b(12)) with lines lw 2 title 'proc\_state\_hst', \
  '' skip 1 using (\$1/60):(b(14)) with lines lw 2 title 'msg\_event', \
  '' skip 1 using (\$1/60):(b(20)) with lines lw 2 title 'the log (state.dir/log)', \
  '' skip 1 using (\$1/60):(b(21) - b(20)) with lines lw 2 title 'the rest of state.dir'
EOF
fi
tail -n 30 "$OUT/bench.log"
echo "samples: $OUT/samples.tsv (the bench exited $rc)"
exit "$rc"
