#!/usr/bin/env bash
# `msgx decode`: exit status and output for good, bad and unreadable input.
# $1 = path of the msgx binary.
set -euo pipefail
MSGX=${1:?usage: decode_cli.sh MSGX_BINARY}
CORPUS="$(dirname "$0")/../corpus/sis"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$MSGX" decode --json "$CORPUS/FLOP-GTDT-1.xml") || fail "good message exit $?"
[[ "$out" == '{"meta":{"SNDR":"AODB"'* ]] || fail "unexpected JSON: $out"

rc=0; out=$("$MSGX" decode --json "$CORPUS/AIRC-DNLD-1.xml") || rc=$?
[[ $rc == 1 && "$out" == '{"class":"PROTOCOL"'* ]] || fail "PROTOCOL: rc=$rc $out"

rc=0; out=$("$MSGX" decode < "$CORPUS/ABNR-ADD-1.xml") || rc=$?
[[ $rc == 1 && "$out" == MALFORMED:* ]] || fail "MALFORMED from stdin: rc=$rc $out"

# A GBK file honours its prolog ("中" is D6 D0 in GBK).
printf '<?xml version="1.0" encoding="GBK"?><MSG><META><SNDR>A</SNDR><SEQN>1</SEQN><DTTM>20031215090311</DTTM><TYPE>FLOP</TYPE><STYP>REMC</STYP></META><FLOP><FLID>1</FLID><REMC>\xd6\xd0</REMC></FLOP></MSG>' > "$TMP/gbk.xml"
out=$("$MSGX" decode --json "$TMP/gbk.xml") || fail "GBK exit $?"
[[ "$out" == *'"value":"中"'* ]] || fail "GBK not transcoded: $out"

rc=0; "$MSGX" decode "$TMP/does-not-exist.xml" 2>/dev/null || rc=$?
[[ $rc == 2 ]] || fail "unreadable file: rc=$rc"
echo "decode_cli: ok"
