#!/usr/bin/env bash
# The shipped monitoring files (docs/monitoring/): the alert rules pass
# `promtool check rules` and their unit tests (`promtool test rules`); every
# alert has a test where it fires and one where it stays quiet; a rule file
# with a broken expression is refused and one with a moved threshold fails
# the tests (so the checks can fail).
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

# Every alert has a test where it fires (an exp_alerts list) and one where it
# is quiet (exp_alerts: []).
awk '
  FNR == NR { if ($1 == "-" && $2 == "alert:") rules[$3] = 1; next }
  $1 == "alertname:" { cur = $2; next }
  $1 == "exp_alerts:" && cur != "" { if ($2 == "[]") quiet[cur] = 1; else fires[cur] = 1; cur = "" }
  END {
    n = 0
    for (r in rules) {
      ++n
      if (!(r in fires)) { print "no test fires " r; bad = 1 }
      if (!(r in quiet)) { print "no test shows " r " quiet"; bad = 1 }
    }
    if (n < 15) { print "only " n " alerts found"; bad = 1 }
    exit bad
  }' "$DIR/msgx-alerts.yml" "$DIR/msgx-alerts-test.yml" >"$TMP/out" || { cat "$TMP/out"; fail "alerts without tests"; }

# A threshold moved by one fails the rule tests (so they can fail).
mkdir "$TMP/moved"
sed 's/msgx_stage_lag_records > 10000/msgx_stage_lag_records > 10001/' "$DIR/msgx-alerts.yml" >"$TMP/moved/msgx-alerts.yml"
cmp -s "$DIR/msgx-alerts.yml" "$TMP/moved/msgx-alerts.yml" && fail "could not move a threshold"
cp "$DIR/msgx-alerts-test.yml" "$TMP/moved/"
if (cd "$TMP/moved" && promtool test rules msgx-alerts-test.yml) >/dev/null 2>&1; then
  fail "the rule tests pass with a moved threshold"
fi

sed 's/expr: msgx_stage_failed == 1/expr: msgx_stage_failed == = 1/' "$DIR/msgx-alerts.yml" >"$TMP/broken.yml"
cmp -s "$DIR/msgx-alerts.yml" "$TMP/broken.yml" && fail "could not break the rules file"
if promtool check rules "$TMP/broken.yml" >/dev/null 2>&1; then fail "a broken rule passed promtool"; fi

echo "monitoring: rules and rule tests ok (every alert fires and stays quiet)"
