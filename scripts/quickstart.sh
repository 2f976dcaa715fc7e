#!/usr/bin/env bash
# Quickstart, from a fresh clone:
#   install the Debian packages, build msgx, start local PostgreSQL, Redis and
#   a Kafka-protocol broker (`msgx dev up`), export their settings, migrate
#   the own database, load the message corpus into the mailbox, show what is
#   there, then run the service if this build has `msgx run`.
# Rerunnable: services already up are left alone; every run loads the corpus
# again, as new messages. `msgx dev down` (or `… --purge`) stops it all.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD_DIR=${MSGX_BUILD_DIR:-build}

step() { printf '\n== %s\n' "$*"; }

step "install dependencies"
bash scripts/install-deps.sh

step "build msgx"
bash scripts/build.sh --target msgx
MSGX=$ROOT/$BUILD_DIR/app/msgx

# As root, PostgreSQL runs as `postgres`, which must reach the dev dir. A
# checkout under a private home (e.g. /root) is out of its reach: use /var/tmp.
if [[ -z ${MSGX_DEV_DIR:-} && $(id -u) -eq 0 ]] &&
   ! runuser -u postgres -- test -x "$ROOT" 2>/dev/null; then
  export MSGX_DEV_DIR=/var/tmp/msgx-dev
  echo "the postgres user cannot reach $ROOT; using MSGX_DEV_DIR=$MSGX_DEV_DIR"
fi

step "start local services (msgx dev up)"
"$MSGX" dev up
eval "$("$MSGX" dev env)"
"$MSGX" dev env

step "migrate the own database (msgx migrate)"
"$MSGX" migrate

step "load the corpus into the mailbox (msgx dev load)"
"$MSGX" dev load

step "what is there"
echo "mailbox rows by TYPE ($MSGX_MAILBOX_URL):"
psql "$MSGX_MAILBOX_URL" -X -c "SELECT cminmsgs_subsystem_type AS type, count(*) AS rows,
  min(cminmsgs_id) AS first_id, max(cminmsgs_id) AS last_id
  FROM cminmsgs GROUP BY 1 ORDER BY min(cminmsgs_id)"
echo "own database tables ($MSGX_POSTGRES_URL):"
psql "$MSGX_POSTGRES_URL" -X -c '\dt'
echo "Kafka ($MSGX_KAFKA_BOOTSTRAP_SERVERS):"
kcat -L -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -m 10
echo "Redis ($MSGX_REDIS_URL): $(redis-cli -u "$MSGX_REDIS_URL" PING)"

step "run msgx (in the background while we look; then in the foreground)"
# The processed mark runs every pipeline.backfill-backoff-ms (30 s by
# default); every 2 s here, so the marked mailbox rows show at once.
export MSGX_PIPELINE_BACKFILL_BACKOFF_MS=${MSGX_PIPELINE_BACKFILL_BACKOFF_MS:-2s}
"$MSGX" run &
MSGX_PID=$!
trap 'kill -TERM $MSGX_PID 2>/dev/null; wait $MSGX_PID' INT TERM
rows=$(psql "$MSGX_MAILBOX_URL" -XAt -c "SELECT count(*) FROM cminmsgs")
for _ in $(seq 1 240); do
  done_rows=$(psql "$MSGX_POSTGRES_URL" -XAt -c "SELECT count(*) FROM proc_state" 2>/dev/null || echo 0)
  unsent=$(psql "$MSGX_POSTGRES_URL" -XAt -c "SELECT count(*) FROM msg_event_state WHERE state <> 'SENT'" 2>/dev/null || echo 1)
  [[ $done_rows == "$rows" && $unsent == 0 ]] && break
  sleep 0.5
done

step "outcomes (proc_state): one row per mailbox row"
psql "$MSGX_POSTGRES_URL" -X -c "SELECT state, error_class, count(*) FROM proc_state GROUP BY 1, 2 ORDER BY 1, 2"
step "events (msg_event_state: the outbox with delivery states) per target"
psql "$MSGX_POSTGRES_URL" -X -c "SELECT target, state, count(*) FROM msg_event_state GROUP BY 1, 2 ORDER BY 1, 2"
step "flights in Redis (hash flightInfo)"
echo "flights: $(redis-cli -u "$MSGX_REDIS_URL" HLEN flightInfo), mirror: $(redis-cli -u "$MSGX_REDIS_URL" HGETALL msgx:mirror | paste -sd' ')"
step "flight events in Kafka (kcat -C -b $MSGX_KAFKA_BOOTSTRAP_SERVERS -t msgx.flight.events)"
kcat -C -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -t msgx.flight.events -X isolation.level=read_committed \
  -o beginning -e -q -f '%k %h\n' | head -n 5
echo "… $(kcat -C -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -t msgx.flight.events -o beginning -e -q | wc -l) events"

step "mailbox rows marked processed (the processed-mark job, docs/jobs.md#processed-mark)"
for _ in $(seq 1 60); do
  unmarked=$(psql "$MSGX_MAILBOX_URL" -XAt -c "SELECT count(*) FROM cminmsgs WHERE cminmsgs_date_processed IS NULL" 2>/dev/null || echo 1)
  [[ $unmarked == 0 ]] && break
  sleep 0.5
done
psql "$MSGX_MAILBOX_URL" -X -c "SELECT cminmsgs_status AS status, count(*) AS rows,
  count(cminmsgs_date_processed) AS marked, max(cminmsgs_date_processed) AS last_processed
  FROM cminmsgs GROUP BY 1 ORDER BY 1"
psql "$MSGX_POSTGRES_URL" -X -c "SELECT mark_state, count(*) FROM proc_state GROUP BY 1 ORDER BY 1"

step "msgx run keeps running (Ctrl-C or SIGTERM drains and stops it)"
"$MSGX" status
wait $MSGX_PID
