#!/usr/bin/env bash
# Capture rows/s from a MariaDB mailbox next to a PostgreSQL one, in the same
# run (docs/performance.md#capture-from-mariadb-and-postgresql).
#
# `msgx dev up --mailbox mariadb` in a temporary dev dir gives both: the dev
# PostgreSQL's `aodb` and the dev MariaDB's `aodb`, each with `cminmsgs` in
# its shape. Each gets ROWS rows of a 1.5 KB message (the corpus's typical
# size) in one statement, then msgx_bench's BM_CapturePostgres and
# BM_CaptureMariaDb capture all of them into a fresh log, three times each.
# Capture reads MariaDB through the least-privilege account msgx uses
# (SELECT, no PROCESS: the gap probe; there are no gaps here).
#
# Usage: bash bench/capture_mailboxes.sh [ROWS]   (default 100000)
#   MSGX=build/app/msgx BENCH=build/bench/msgx_bench by default.
set -euo pipefail
ROWS=${1:-100000}
MSGX=$(realpath "${MSGX:-build/app/msgx}")
BENCH=$(realpath "${BENCH:-build/bench/msgx_bench}")

while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^MSGX_' || true)
DEV_DIR=$(mktemp -d /tmp/msgx-bench-capture-XXXXXX)
chmod 755 "$DEV_DIR"
export MSGX_DEV_DIR=$DEV_DIR
cleanup() {
  "$MSGX" dev down >/dev/null 2>&1 || true
  rm -rf "$DEV_DIR"
}
trap cleanup EXIT

"$MSGX" dev up --mailbox mariadb >/dev/null
eval "$("$MSGX" dev env)"
port=$(cat "$DEV_DIR/mariadb.port")
sock=$DEV_DIR/mariadb/mysqld.sock
pg_mailbox=${MSGX_POSTGRES_URL%/*}/aodb
body="<MSG>$(printf 'x%.0s' $(seq 1 1500))</MSG>"

psql "$pg_mailbox" -Xq -c "INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received,
  cminmsgs_status) SELECT '$body', localtimestamp, 'VALID' FROM generate_series(1, $ROWS)"
psql "$pg_mailbox" -Xq -c "VACUUM ANALYZE cminmsgs"
mariadb --no-defaults -S "$sock" -u"$(id -un)" aodb -e "INSERT INTO cminmsgs
  (cminmsgs_clob_msg, cminmsgs_date_received, cminmsgs_status)
  SELECT '$body', NOW(6), 'VALID' FROM seq_1_to_$ROWS; ANALYZE TABLE cminmsgs;" >/dev/null

echo "rows: $ROWS per mailbox; machine: $(nproc) cores, $(uname -m); load: $(cut -d' ' -f1-3 /proc/loadavg)"
MSGX_BENCH_PG_MAILBOX=$pg_mailbox \
MSGX_BENCH_MARIADB_MAILBOX=mysql://msgx:msgx@127.0.0.1:$port/aodb \
  "$BENCH" --benchmark_filter='BM_Capture' --benchmark_counters_tabular=true
