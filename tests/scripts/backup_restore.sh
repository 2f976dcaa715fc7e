#!/usr/bin/env bash
# Script test: `msgx backup DIR` while `msgx run` runs and rows keep
# arriving; more rows after the backup, so PostgreSQL, Redis and Kafka move
# on past it; then stop, `msgx restore DIR`, start: the restored log captures
# again the mailbox rows after its watermark, the rebuilt state's batch
# digests agree with PostgreSQL's, and nothing is lost or written twice
# (every mailbox row has one outcome, no event twice, the Kafka topic has no
# event twice, no ALARM). And a backup of a log that holds only its SETTINGS
# record (taken before the day's sweep was appended: right after the first
# start-up), restored behind all of that: the day's SWEEP and EXPIRE are
# appended again at the same offsets with the same limits, so the digests
# agree (they differed at offset 2 when the limits came from the append
# time). The daily sweep is due at once: history.sweep-at is the airport
# time at the start less a minute (00:00 in the day's first minute), so the
# next day's sweep is a day away and a run across airport midnight appends
# none (with 00:00 it did, and a backup from before a sweep that PostgreSQL
# has folded cannot be restored behind it:
# docs/operations.md#backup-and-restore). Uses `msgx dev up` in a
# temporary directory.
#
# Usage: backup_restore.sh path/to/msgx
set -euo pipefail
MSGX=$(realpath "${1:?usage: $0 path/to/msgx}")
source "$(dirname "$0")/lib/dev_test.sh"
TMP=$(scratch_dir backup)
export MSGX_DEV_DIR=$TMP/dev
RUN_PID=

cleanup() {
  local rc=$?
  [[ -n $RUN_PID ]] && kill -KILL "$RUN_PID" 2>/dev/null || true
  "$MSGX" dev down >/dev/null 2>&1 || true
  if [[ $rc != 0 ]]; then grep -h -E "ALARM|error|digest|restor|stopped" "$TMP"/run*.log | tail -30 >&2 || true; fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT

"$MSGX" dev up >/dev/null
eval "$("$MSGX" dev env)"
export MSGX_STATE_DIR=$TMP/state MSGX_HTTP_LISTEN=127.0.0.1:0
"$MSGX" migrate >/dev/null
sweep_at() {  # the airport time now less one minute, HH:MM, not before 00:00
  local now
  now=$(TZ=${MSGX_AIRPORT_TIMEZONE:-Asia/Shanghai} date +%H:%M)
  local minutes=$((10#${now%:*} * 60 + 10#${now#*:} - 1))
  ((minutes < 0)) && minutes=0
  printf '%02d:%02d' $((minutes / 60)) $((minutes % 60))
}
MSGX_HISTORY_SWEEP_AT=$(sweep_at)
export MSGX_HISTORY_SWEEP_AT

q() { psql "$1" -XAtc "$2"; }
mailbox_rows() { q "$MSGX_MAILBOX_URL" 'SELECT count(*) FROM cminmsgs'; }
outcomes() { q "$MSGX_POSTGRES_URL" 'SELECT count(*) FROM proc_state' 2>/dev/null || echo 0; }
kafka_keys() {  # the event_key of every message on the flight events topic
  kcat -C -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -t msgx.flight.events -o beginning -e -q -f '%s\n' \
    2>/dev/null | grep -o '"event_key":"[^"]*"' || true
}
start() {
  "$MSGX" run 2>>"$TMP/run$1.log" &
  RUN_PID=$!
}
stop() {
  kill -TERM "$RUN_PID"
  local rc=0
  wait "$RUN_PID" || rc=$?
  RUN_PID=
  [[ $rc == 0 ]] || fail "msgx run exited $rc after SIGTERM"
}
wait_all() {  # until every mailbox row has its outcome and no event is pending
  local want got pending
  want=$(mailbox_rows)
  for _ in $(seq 900); do
    got=$(outcomes)
    pending=$(q "$MSGX_POSTGRES_URL" "SELECT count(*) FROM msg_event_state WHERE state = 'PENDING'" \
      2>/dev/null || echo 1)
    (( got >= want && pending == 0 )) && return 0
    kill -0 "$RUN_PID" 2>/dev/null || fail "msgx run died"
    sleep 0.1
  done
  fail "$got of $want outcomes"
}

backup() {  # prints the number of records backed up
  local out
  out=$("$MSGX" backup "$1") || fail "backup: $out"
  [[ $out == "backup: log "*" records, "*" keys in $1" ]] || fail "backup said: $out"
  sed -n 's/.*, \([0-9]*\) records,.*/\1/p' <<<"$out"
}
records() { "$MSGX" status --json | sed -n 's/.*"log":{[^}]*"records":\([0-9]*\).*/\1/p'; }

# 0. A log with its SETTINGS record only (a first start-up with no sweep
#    scheduled: the state a backup sees between the SETTINGS record and the
#    day's sweep), backed up; then the service as configured appends the
#    day's sweep on top of it.
MSGX_HISTORY_SWEEP_AT=off start 0
for _ in $(seq 300); do [[ $(records) == 1 ]] && break; sleep 0.1; done
stop
[[ $(records) == 1 ]] || fail "the first start-up's log has $(records) records, want 1 (SETTINGS)"
settings_records=$(backup "$TMP/backup-settings")
[[ $settings_records == 1 ]] || fail "the SETTINGS-only backup has $settings_records records"

start 1
"$MSGX" dev load >/dev/null
wait_all
"$MSGX" dev load >/dev/null &
load_pid=$!
# A backup while rows are captured and folded: behind what follows.
mid_records=$(backup "$TMP/backup-mid")
wait "$load_pid"
wait_all
rc=0; "$MSGX" backup "$TMP/backup-mid" >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "a backup over an existing directory: exit $rc, want 2"
rc=0; "$MSGX" restore "$TMP/backup-mid" >/dev/null 2>&1 || rc=$?
[[ $rc == 1 ]] || fail "restore while msgx run holds state.dir: exit $rc, want 1"
# A backup of the whole log, taken online.
full_records=$(backup "$TMP/backup-full")
stop
log_records=$(records)
[[ $full_records == "$log_records" ]] || fail "the full backup has $full_records of $log_records records"
(( mid_records < log_records )) || fail "the mid backup ($mid_records) is not behind ($log_records)"
events_before=$(q "$MSGX_POSTGRES_URL" 'SELECT count(*) FROM msg_event')
max_event_before=$(q "$MSGX_POSTGRES_URL" 'SELECT max(event_id) FROM msg_event')
no_event_twice() {
  local keys sent
  [[ $(q "$MSGX_POSTGRES_URL" 'SELECT count(*) FROM msg_event') == "$events_before" ]] \
    || fail "msg_event changed across the restore"
  [[ $(q "$MSGX_POSTGRES_URL" 'SELECT max(event_id) FROM msg_event') == "$max_event_before" ]] \
    || fail "new events were written after the restore"
  keys=$(kafka_keys)
  sent=$(q "$MSGX_POSTGRES_URL" "SELECT count(*) FROM msg_event WHERE target = 'KAFKA:msg'")
  [[ $(sort <<<"$keys" | uniq -d | wc -l) == 0 ]] || fail "an event twice on Kafka"
  [[ $(wc -l <<<"$keys") == "$sent" ]] || fail "$(wc -l <<<"$keys") events on Kafka, $sent KAFKA:msg events"
}

wait_rebuild() {  # until run $1's rebuild check ends, either way
  for _ in $(seq 600); do
    grep -q -E 'batch digests match|ALARM' "$TMP/run$1.log" && return 0
    sleep 0.1
  done
  fail "run $1: no end of the rebuild check"
}
check_restored() {  # run $1 after a restore: digests agree, nothing twice
  wait_rebuild "$1"
  grep -q 'ALARM' "$TMP/run$1.log" && fail "run $1: $(grep ALARM "$TMP/run$1.log")"
  grep -q 'rebuild caught up with PostgreSQL: [0-9]* batch digests match' "$TMP/run$1.log" \
    || fail "run $1: no digest check"
  for _ in $(seq 600); do (( $(records) >= log_records )) && break; sleep 0.1; done
  (( $(records) >= log_records )) || fail "run $1: the log did not capture the rows again"
  no_event_twice
}

# 1. The whole log restored: the rebuilt state's digests agree and nothing
#    is written twice. Restored twice, the second time with the names of
#    this second and the next two already taken, as by restores just
#    before: the old log goes aside under a name of its own.
"$MSGX" restore "$TMP/backup-full" >"$TMP/restore.out" || fail "restore: $(cat "$TMP/restore.out")"
now=$(date +%s)
for s in "$now" $((now + 1)) $((now + 2)); do
  mkdir -p "$MSGX_STATE_DIR/log.before-restore-$s" && touch "$MSGX_STATE_DIR/log.before-restore-$s/CURRENT"
done
"$MSGX" restore "$TMP/backup-full" >"$TMP/restore.out" || fail "restore again: $(cat "$TMP/restore.out")"
grep -q "to $MSGX_STATE_DIR/log.before-restore-[0-9]*-2\$" "$TMP/restore.out" \
  || fail "restore again: $(cat "$TMP/restore.out")"
start 2
check_restored 2
stop

# 2. A log restored behind PostgreSQL, Redis and Kafka: the mailbox rows
#    after its watermark are captured again, in the same order, the fold
#    decides them as before, the digests at PostgreSQL's batch ends agree,
#    nothing is written twice; and new rows go on through.
"$MSGX" restore "$TMP/backup-mid" >"$TMP/restore.out" || fail "restore: $(cat "$TMP/restore.out")"
start 3
check_restored 3
"$MSGX" dev load >/dev/null
wait_all
stop
(( $(outcomes) == $(mailbox_rows) )) || fail "$(outcomes) outcomes for $(mailbox_rows) rows"
grep -q 'ALARM' "$TMP/run3.log" && fail "run 3: $(grep ALARM "$TMP/run3.log")"
[[ $(q "$MSGX_POSTGRES_URL" 'SELECT count(*) FROM msg_event') -gt "$events_before" ]] \
  || fail "the rows after the restore made no events"
log_records=$(records)
events_before=$(q "$MSGX_POSTGRES_URL" 'SELECT count(*) FROM msg_event')
max_event_before=$(q "$MSGX_POSTGRES_URL" 'SELECT max(event_id) FROM msg_event')

# 3. The SETTINGS-only backup, behind everything: the day's SWEEP and EXPIRE
#    come back at offsets 1 and 2 as the same commands, every mailbox row is
#    captured again after them, and the digests agree.
"$MSGX" restore "$TMP/backup-settings" >"$TMP/restore.out" || fail "restore: $(cat "$TMP/restore.out")"
start 4
check_restored 4
stop
for run in 1 4; do
  grep -q 'daily sweep of [0-9]* appended at start-up' "$TMP/run$run.log" \
    || fail "run $run: the day's sweep was not appended at start-up"
done
echo "backup_restore: ok (backups at $settings_records, $mid_records and $full_records records)"
