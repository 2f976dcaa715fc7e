#!/usr/bin/env bash
# Script test: `msgx bench` at small scale (two steps of 3 s at 20 and 100
# msg/s, 20 flights, a 50-message baseline) against its own dev services,
# with an outside read_committed consumer (kcat) running beside it. Checks
# report.json against what kcat saw and what the mailbox holds:
#   - every step: delivered == offered, lost == 0, duplicated == 0,
#     order_violations == 0, 0 < p50 <= p95 <= p99 <= max, cpu > 0, rss > 0;
#   - setup + steps' offered == the FLOP and STTS rows the bench wrote into
#     the mailbox; setup + steps' delivered == the distinct msgx-mailbox-id
#     values kcat read on the msg and reference topics above the mailbox's
#     previous end; kcat saw no msgx-event-id twice;
#   - each step's latency by second: ascending seconds, p50 <= p99 <= max,
#     the step's max among them;
#   - the baseline processed its 50 messages; the charts are PNG files;
#     `msgx run` stopped with 0 and the bench exited 0;
#   - the rows' received times, as capture read them into proc_state, are
#     within 15 minutes of now.
# The bench starts from `msgx dev up --mailbox MAILBOX` (postgresql unless
# given; bench_quick_mariadb.sh passes mariadb) and is run as a new user
# runs it: no MSGX_ setting but the dev dir, `--mailbox MAILBOX`, so it
# finds the dev services itself; report.json must name that mailbox.
# Usage: bench_quick.sh path/to/msgx [postgresql|mariadb]
set -euo pipefail
MSGX=$(realpath "${1:?usage: $0 path/to/msgx [postgresql|mariadb]}")
MAILBOX=${2:-postgresql}

source "$(dirname "$0")/lib/dev_test.sh"
WORK=$(scratch_dir bench-quick)
export MSGX_DEV_DIR=$WORK/dev
KCAT_PIDS=()
cleanup() {
  local rc=$?
  for p in "${KCAT_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  "$MSGX" dev down --purge >/dev/null 2>&1 || true
  if ((rc != 0)) && [[ -f $WORK/out/msgx.log ]]; then tail -20 "$WORK/out/msgx.log" >&2; fi
  rm -rf "$WORK"
  exit "$rc"
}
trap cleanup EXIT

"$MSGX" dev up --mailbox "$MAILBOX" >/dev/null
eval "$("$MSGX" dev env)"
"$MSGX" migrate >/dev/null
case $MAILBOX in
  postgresql)
    KIND=PostgreSQL
    psql_box() { psql "$MSGX_MAILBOX_URL" -XAtq -c "$1"; }
    ;;
  mariadb)
    KIND=MariaDB
    [[ $MSGX_MAILBOX_URL == mysql://* ]] || fail "dev env names another mailbox: $MSGX_MAILBOX_URL"
    psql_box() {
      mariadb --no-defaults -h 127.0.0.1 -P "$(cat "$MSGX_DEV_DIR/mariadb.port")" -umsgx -pmsgx \
        -N -B aodb -e "$1"
    }
    ;;
  *) fail "mailbox $MAILBOX: postgresql or mariadb" ;;
esac
BEFORE=$(psql_box "SELECT coalesce(max(cminmsgs_id), 0) FROM cminmsgs")

# The outside consumer: from the end of each topic, read_committed.
for topic in msgx.flight.events msgx.reference; do
  kcat -C -q -u -b "$MSGX_KAFKA_BOOTSTRAP_SERVERS" -t "$topic" -o end \
    -X isolation.level=read_committed -f '%h\n' >"$WORK/$topic.txt" 2>"$WORK/$topic.err" &
  KCAT_PIDS+=($!)
done
sleep 2  # kcat has its assignment and end offsets before the first record

# Only the dev dir and the poll interval: the bench finds the services itself.
unset_dev_env=()
while IFS= read -r name; do
  [[ $name == MSGX_DEV_DIR ]] || unset_dev_env+=(-u "$name")
done < <(compgen -e | grep '^MSGX_')
env "${unset_dev_env[@]}" MSGX_PIPELINE_POLL_INTERVAL=100ms "$MSGX" bench --mailbox "$MAILBOX" \
  --steps 20,100 --step-seconds 3 --flights 20 --baseline-messages 50 \
  --drain-idle-seconds 20 --out "$WORK/out" >"$WORK/bench.txt" 2>&1 ||
  { cat "$WORK/bench.txt" >&2; fail "msgx bench exited non-zero"; }
sleep 1
for p in "${KCAT_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
KCAT_PIDS=()

REPORT=$WORK/out/report.json
python3 - "$REPORT" "$WORK" "$BEFORE" "$KIND" \
  "$(psql_box "SELECT count(*) FROM cminmsgs WHERE cminmsgs_id > $BEFORE
     AND cminmsgs_subsystem_type IN ('FLOP', 'STTS')")" <<'PY' || fail "report.json check"
import json, re, sys
report, work, before, kind = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
mailbox_judged = int(sys.argv[5])
r = json.load(open(report))
assert r["mailbox"] == kind, (r["mailbox"], kind)
steps = r["steps"]
# A loaded machine may not offer 100 msg/s (generator-limited ends the
# ramp there); that is a figure, not a failure.
assert [s["name"] for s in steps] in (["20"], ["20", "100"]), steps
for s in steps:
    assert s["offered"] > 0 and s["delivered"] == s["offered"], s
    assert s["lost"] == 0 and s["duplicated"] == 0 and s["order_violations"] == 0, s
    assert 0 < s["p50_ms"] <= s["p95_ms"] <= s["p99_ms"] <= s["max_ms"], s
    assert s["cpu"] > 0 and s["rss"] > 0, s
    # Second by second: ascending, each p50 <= p99 <= max, together every
    # KAFKA:msg latency of the step (the step's max is one second's max).
    secs = s["seconds"]
    assert secs and [x[0] for x in secs] == sorted({x[0] for x in secs}), secs
    assert all(x[1] > 0 and 0 < x[2] <= x[3] <= x[4] for x in secs), secs
    assert 0 < sum(x[1] for x in secs) <= s["delivered"], (secs, s["delivered"])
    assert max(x[4] for x in secs) == s["max_ms"], (secs, s["max_ms"])
offered = r["setup"]["offered"] + sum(s["offered"] for s in steps)
delivered = r["setup"]["delivered"] + sum(s["delivered"] for s in steps)
assert offered == mailbox_judged, (offered, mailbox_judged)
ids, events = set(), []
for topic in ("msgx.flight.events", "msgx.reference"):
    for line in open(f"{work}/{topic}.txt"):
        h = dict(kv.split("=", 1) for kv in line.strip().split(",") if "=" in kv)
        if "msgx-mailbox-id" in h and int(h["msgx-mailbox-id"]) > before:
            ids.add(int(h["msgx-mailbox-id"]))
            events.append(h["msgx-event-id"])
assert delivered == len(ids), ("report delivered", delivered, "kcat distinct ids", len(ids))
assert len(events) == len(set(events)), "kcat saw a duplicated msgx-event-id"
b = r["baseline"]
assert b is not None and b["messages"] == 50 and b["failed"] == 0 and b["msg_per_s"] > 0, b
assert r["msgx_exit"] == "stopped by SIGTERM, exit status 0", r["msgx_exit"]
assert r["problems"] == [], r["problems"]
assert "not durable" in open(f"{work}/out/report.md").read()
for png in ("throughput.png", "latency.png", "latency-seconds.png"):
    assert open(f"{work}/out/{png}", "rb").read(8) == b"\x89PNG\r\n\x1a\n", png
print(f"bench_quick ({kind}): {len(steps)} steps, {offered} offered = {delivered} delivered = kcat's {len(ids)}")
PY

# The writer's received times as capture read them back: within minutes of
# now, so each mailbox's time column was written in its own convention.
skew=$(psql "$MSGX_POSTGRES_URL" -XAtq -c "SELECT coalesce(max(abs(extract(epoch FROM
  received_at - now()))), -1)::int FROM (SELECT received_at FROM proc_state WHERE msg_id > $BEFORE
  UNION ALL SELECT received_at FROM proc_state_hst WHERE msg_id > $BEFORE) r")
((skew >= 0 && skew < 900)) || fail "the bench rows' received_at is ${skew}s from now"
echo "PASS bench_quick ($MAILBOX)"
