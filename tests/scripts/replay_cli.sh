#!/usr/bin/env bash
# `msgx replay --class` refuses the classes it must never bulk-replay:
# MALFORMED and PROTOCOL (never replayed) and QUARANTINED (by explicit id
# only: such a message crashed the processor). No database is reached: the
# refusal comes first. $1 = path of the msgx binary.
set -euo pipefail
MSGX=${1:?usage: replay_cli.sh MSGX_BINARY}
fail() { echo "FAIL: $*" >&2; exit 1; }
export MSGX_POSTGRES_URL=postgresql://127.0.0.1:1/nowhere
for class in QUARANTINED MALFORMED PROTOCOL; do
  set +e
  err=$("$MSGX" replay --class "$class" 2>&1 >/dev/null)
  rc=$?
  set -e
  [[ $rc -eq 2 ]] || fail "--class $class: exit $rc, want 2"
  [[ "$err" == *"$class"* ]] || fail "--class $class: the message does not name it: $err"
done
[[ "$("$MSGX" replay --class QUARANTINED 2>&1)" == *"--msg ID"* ]] ||
  fail "--class QUARANTINED does not point at --msg"
echo "replay_cli: ok"
