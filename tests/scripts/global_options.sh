#!/usr/bin/env bash
# Global options (--config, --log-level) work before and after the
# subcommand: `msgx run --config F` as the README writes it.
# $1 = path of the msgx binary.
set -euo pipefail
MSGX=${1:?usage: global_options.sh MSGX_BINARY}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
unset MSGX_CONFIG MSGX_STATE_DIR

printf 'state:\n  dir: %s/marker-state-dir\n' "$TMP" > "$TMP/msgx.yaml"
before=$("$MSGX" --config "$TMP/msgx.yaml" config) || fail "--config before: exit $?"
after=$("$MSGX" config --config "$TMP/msgx.yaml") || fail "--config after: exit $?"
plain=$("$MSGX" config) || fail "no --config: exit $?"
[[ "$before" == *marker-state-dir* ]] || fail "--config before the subcommand ignored: $before"
[[ "$after" == *marker-state-dir* ]] || fail "--config after the subcommand ignored: $after"
[[ "$plain" != *marker-state-dir* ]] || fail "the marker appears without --config"
[[ "$before" == "$after" ]] || fail "before and after differ"

rc=0; "$MSGX" config --log-level nonsense >/dev/null 2>&1 || rc=$?
[[ $rc == 2 ]] || fail "--log-level after the subcommand not parsed: rc=$rc"
echo "global_options: ok"
