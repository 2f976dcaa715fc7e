#!/usr/bin/env bash
# The shipped monitoring files (docs/monitoring/): the alert rules pass
# `promtool check rules` and their unit tests (`promtool test rules`), and a
# rule file with a broken expression is refused (so the check can fail).
# The dashboard's JSON, and that every metric the rules and the dashboard
# query exists, are checked against a live exposition
# (MetricsExpositionTest). $1 = path of the msgx binary (unused).
set -euo pipefail
DIR="$(cd "$(dirname "$0")/../../docs/monitoring" && pwd)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
command -v promtool >/dev/null || fail "promtool not found (Debian package prometheus, scripts/install-deps.sh)"

promtool check rules "$DIR/msgx-alerts.yml" >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "promtool check rules"; }
(cd "$DIR" && promtool test rules msgx-alerts-test.yml) >"$TMP/out" 2>&1 || { cat "$TMP/out"; fail "promtool test rules"; }

sed 's/expr: msgx_stage_failed == 1/expr: msgx_stage_failed == = 1/' "$DIR/msgx-alerts.yml" >"$TMP/broken.yml"
cmp -s "$DIR/msgx-alerts.yml" "$TMP/broken.yml" && fail "could not break the rules file"
if promtool check rules "$TMP/broken.yml" >/dev/null 2>&1; then fail "a broken rule passed promtool"; fi

echo "monitoring: rules and rule tests ok"
