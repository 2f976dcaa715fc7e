#!/usr/bin/env bash
# The archive retention's reads of proc_state_hst past the index entries of
# the rows it deleted (docs/performance.md, "The history's retention in
# steady operation"; docs/jobs.md#archive-retention), on the PostgreSQL of
# `msgx dev up`, with psql alone (msgx itself does not run):
#
#   ROWS history rows archived about 500 days ago (all past the 400-day
#   retention), autovacuum off on the table (as between two of its vacuums),
#   all but the newest 1,000 deleted; then EXPLAIN (ANALYZE, BUFFERS) of the
#   job's batch read from the oldest row (the first of them marks the deleted
#   rows' entries dead), of its backlog count from the oldest, and of its
#   batch read after the last deleted row, as the job now reads.
#
# Usage: bash bench/hst_retention.sh [ROWS]   (default 20000000: about 3
#        minutes to load, 4.6 GB in the dev directory)
# Needs a built msgx (MSGX, default build/app/msgx). Starts its own dev
# services in MSGX_DEV_DIR (default /var/tmp/msgx-hst-bench), stopped and
# purged at the end. Prints figures only; it asserts nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS=${1:-20000000}
MSGX=${MSGX:-build/app/msgx}
export MSGX_DEV_DIR=${MSGX_DEV_DIR:-/var/tmp/msgx-hst-bench}
"$MSGX" dev down --purge >/dev/null 2>&1 || true
"$MSGX" dev up >/dev/null
trap '"$MSGX" dev down --purge >/dev/null 2>&1 || true' EXIT
eval "$("$MSGX" dev env)"
MSGX_LOG_LEVEL=warn "$MSGX" migrate >/dev/null
sql() { psql "$MSGX_POSTGRES_URL" -Xq -At -v ON_ERROR_STOP=1 "$@"; }

start=$(date +%s)
sql -c "INSERT INTO proc_state_hst (msg_id, state, identity_key, attempts, updated_at,
          received_at, enqueued_at, log_offset, backfill_at, backfill_next_at, mark_state,
          archived_at)
        SELECT g, 'SUCCEEDED', 'AODB|FLOP|GTDT|' || lpad((g % 999999 + 1)::text, 6, '0'), 1,
               t, t, t, g, t, t, 'MARKED', t + interval '1 day'
        FROM generate_series(1, $ROWS) g,
             LATERAL (SELECT now() - interval '500 days' + interval '1 second' * (g / 6)) x(t)" \
  -c "ALTER TABLE proc_state_hst SET (autovacuum_enabled = false)" \
  -c "VACUUM (FREEZE, ANALYZE) proc_state_hst" \
  -c "DELETE FROM proc_state_hst WHERE msg_id <= $ROWS - 1000"
echo "loaded in $(($(date +%s) - start)) s; the index on (archived_at, msg_id):" \
  "$(sql -c "SELECT pg_size_pretty(pg_relation_size('proc_state_hst_archived_idx'))")"

# The job's reads (stream/jobs/proc_state_hst_retention.cc), with the
# cutoff of a 400-day retention; "after" starts after the newest deleted row.
due="FROM proc_state_hst WHERE archived_at < now() - interval '400 days'"
last="(SELECT archived_at, msg_id FROM proc_state_hst WHERE msg_id = $ROWS - 999)"
declare -A query=(
  [from_oldest]="SELECT msg_id $due ORDER BY archived_at, msg_id LIMIT 1000"
  [backlog_count]="SELECT count(*) FROM (SELECT msg_id $due ORDER BY archived_at, msg_id LIMIT 100000) d"
  [after_last]="SELECT msg_id $due AND (archived_at, msg_id) >= $last ORDER BY archived_at, msg_id LIMIT 1000"
)
for q in from_oldest from_oldest from_oldest from_oldest backlog_count backlog_count \
  after_last after_last after_last; do
  plan=$(sql -c "EXPLAIN (ANALYZE, BUFFERS) ${query[$q]}")
  printf '%-14s %s; %s\n' "$q" \
    "$(grep -m1 -o 'Buffers: .*' <<<"$plan")" "$(grep -o 'Execution Time: .*' <<<"$plan")"
done
