#!/usr/bin/env bash
# `msgx --version` and `msgx version` print the same three lines, and each
# says what the source tree says: the CMake project version, kFoldVersion in
# stream/fold/fold.h and the highest V<n> under migrations/.
# $1 = path of the msgx binary.
set -euo pipefail
MSGX=${1:?usage: version.sh MSGX_BINARY}
SRC=$(cd "$(dirname "$0")/../.." && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
unset MSGX_CONFIG

flag=$("$MSGX" --version) || fail "--version: exit $?"
cmd=$("$MSGX" version) || fail "version: exit $?"
[[ "$flag" == "$cmd" ]] || fail "--version and version differ: '$flag' vs '$cmd'"

want_version=$(sed -n 's/^project(msgx VERSION \([0-9.]*\).*/\1/p' "$SRC/CMakeLists.txt")
want_fold=$(sed -n 's/.*kFoldVersion = \([0-9]*\);.*/\1/p' "$SRC/stream/fold/fold.h")
want_schema=$(ls "$SRC/migrations" | sed -n 's/^V\([0-9]*\)__.*\.sql$/\1/p' | sort -n | tail -1)
[[ -n "$want_version" && -n "$want_fold" && -n "$want_schema" ]] || fail "cannot read the source tree"
want=$(printf 'msgx %s\nfold version %s\nschema version %s' "$want_version" "$want_fold" "$want_schema")
[[ "$flag" == "$want" ]] || fail "got '$flag', want '$want'"
echo "version: ok"
