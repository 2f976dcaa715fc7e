#!/usr/bin/env bash
# Capture's re-read of skipped ranges (docs/capture.md#late-rows): the query
# every poll runs over all skipped ranges, in the plain-join form it had and
# the LATERAL form it has now, on a throwaway PostgreSQL 15 with a mailbox
# of ROWS rows and a gap every 21st id (what the 1,000-cycle crash loop
# leaves: about 3,400 ranges over 70,000 rows).
#
# Usage: bash bench/capture_ranges.sh [ROWS]   (default 72000; as root)
# Prints PostgreSQL's "Execution Time" of each form.
set -euo pipefail
ROWS=${1:-72000}
PGBIN=/usr/lib/postgresql/15/bin
PORT=${PORT:-54999}
DIR=$(mktemp -d /tmp/msgx-bench-ranges-XXXXXX)
chown postgres "$DIR"
cleanup() {
  su postgres -c "$PGBIN/pg_ctl -D $DIR/data stop -m immediate" >/dev/null 2>&1 || true
  rm -rf "$DIR"
}
trap cleanup EXIT
su postgres -c "$PGBIN/initdb -D $DIR/data -A trust >/dev/null"
su postgres -c "$PGBIN/pg_ctl -D $DIR/data -o '-p $PORT -k /tmp' -l $DIR/log -w start >/dev/null"
psql_() { psql -h 127.0.0.1 -p "$PORT" -U postgres -X -q "$@"; }
psql_ <<SQL
CREATE TABLE cminmsgs (cminmsgs_id bigserial PRIMARY KEY, cminmsgs_clob_msg text,
                       cminmsgs_date_received timestamptz);
INSERT INTO cminmsgs (cminmsgs_clob_msg, cminmsgs_date_received)
  SELECT repeat('x', 1500), now() FROM generate_series(1, $ROWS);
DELETE FROM cminmsgs WHERE cminmsgs_id % 21 = 0;
ANALYZE cminmsgs;
SQL
gaps="SELECT cminmsgs_id + 1 AS lo, n - 1 AS hi FROM (SELECT cminmsgs_id, lead(cminmsgs_id)
      OVER (ORDER BY cminmsgs_id) AS n FROM cminmsgs) g WHERE n > cminmsgs_id + 1"
LO=$(psql_ -Atc "SELECT array_agg(lo) FROM ($gaps) r")
HI=$(psql_ -Atc "SELECT array_agg(hi) FROM ($gaps) r")
echo "rows: $(psql_ -Atc 'SELECT count(*) FROM cminmsgs'), skipped ranges: $(echo "$LO" | tr ',' '\n' | wc -l)"
psql_ <<SQL | grep -E "Execution Time" | sed -e '1s/^/join:    /' -e '2s/^/lateral: /'
PREPARE joined(bigint[], bigint[], int) AS
  SELECT m.cminmsgs_id, m.cminmsgs_clob_msg FROM unnest(\$1, \$2) AS r(lo, hi)
  JOIN cminmsgs m ON m.cminmsgs_id BETWEEN r.lo AND r.hi ORDER BY m.cminmsgs_id LIMIT \$3;
EXPLAIN ANALYZE EXECUTE joined('$LO', '$HI', 1000);
PREPARE lateral_(bigint[], bigint[], int) AS
  SELECT m.cminmsgs_id, m.cminmsgs_clob_msg FROM unnest(\$1, \$2) AS r(lo, hi)
  CROSS JOIN LATERAL (SELECT * FROM cminmsgs x WHERE x.cminmsgs_id BETWEEN r.lo AND r.hi
                      ORDER BY x.cminmsgs_id LIMIT \$3) m ORDER BY m.cminmsgs_id LIMIT \$3;
EXPLAIN ANALYZE EXECUTE lateral_('$LO', '$HI', 1000);
SQL
