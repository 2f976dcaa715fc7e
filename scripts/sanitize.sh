#!/usr/bin/env bash
# The test suites under a sanitizer (docs/testing.md#sanitizer-builds).
#
#   scripts/sanitize.sh address     ASan: unit tests with LeakSanitizer, then
#                                   the integration and script tests
#   scripts/sanitize.sh undefined   UBSan: the same suites
#
# Builds msgx and both test binaries into ./build-asan or ./build-ubsan (or
# $MSGX_BUILD_DIR) with MSGX_SANITIZE, then runs them through ctest. Every
# process, msgx started by a test included, writes its reports to
# $MSGX_SANITIZE_REPORTS (default <build dir>/sanitizer-reports), emptied
# first. Exits non-zero when a test fails or any report was written, and
# prints the first lines of each report. Not part of CI: about 20 minutes
# of build and 10 of tests on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
KIND=${1:-}
case "$KIND" in
  address) DEFAULT_DIR=build-asan ;;
  undefined) DEFAULT_DIR=build-ubsan ;;
  *) echo "usage: sanitize.sh address | undefined" >&2; exit 2 ;;
esac
BUILD_DIR=${MSGX_BUILD_DIR:-$DEFAULT_DIR}
REPORTS=${MSGX_SANITIZE_REPORTS:-$PWD/$BUILD_DIR/sanitizer-reports}
MSGX_BUILD_DIR=$BUILD_DIR MSGX_BUILD_SANITIZE=$KIND bash scripts/build.sh \
  --target msgx msgx_unit_tests msgx_integration_tests
rm -rf "$REPORTS"
mkdir -p "$REPORTS"

status=0
if [[ $KIND == address ]]; then
  # Leaks are checked in the unit tests only: the integration tests kill
  # msgx with SIGKILL on purpose, and such a process has nothing to report.
  ASAN_OPTIONS=log_path=$REPORTS/report:detect_leaks=1 \
    ctest --test-dir "$BUILD_DIR" --output-on-failure -R '^unit$' || status=1
  ASAN_OPTIONS=log_path=$REPORTS/report:detect_leaks=0:abort_on_error=1 \
    ctest --test-dir "$BUILD_DIR" --output-on-failure -E '^unit$' || status=1
else
  # UBSan reports and carries on; the report files are the verdict.
  UBSAN_OPTIONS=print_stacktrace=1:log_path=$REPORTS/report \
    ctest --test-dir "$BUILD_DIR" --output-on-failure || status=1
fi

shopt -s nullglob
reports=("$REPORTS"/report.*)
if ((${#reports[@]} > 0)); then
  echo "sanitize: ${#reports[@]} report(s) in $REPORTS" >&2
  for r in "${reports[@]}"; do
    echo "== $r" >&2
    head -12 "$r" >&2
  done
  status=1
fi
if ((status == 0)); then echo "sanitize: $KIND: every test passed, no report"; fi
exit "$status"
