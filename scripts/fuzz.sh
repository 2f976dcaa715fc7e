#!/usr/bin/env bash
# libFuzzer runs of the SIS decoder (fuzz/sis_decoder_fuzz.cc).
#
#   scripts/fuzz.sh smoke          ~60 s over a copy of the corpus; CI/test.sh
#   scripts/fuzz.sh long SECONDS   a longer run; keeps its corpus in
#                                  build-fuzz/fuzz-corpus between runs
#
# Builds only the fuzz target with clang++ into ./build-fuzz (or
# $MSGX_BUILD_FUZZ_DIR). Exits non-zero when libFuzzer finds a crash, leak,
# sanitizer report or timeout; the reproducer is left in build-fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=${1:-smoke}
case "$MODE" in
  smoke) SECONDS_TOTAL=60 ;;
  long) SECONDS_TOTAL=${2:?usage: fuzz.sh long SECONDS} ;;
  *) echo "usage: fuzz.sh smoke | long SECONDS" >&2; exit 2 ;;
esac
BUILD_DIR=${MSGX_BUILD_FUZZ_DIR:-build-fuzz}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}  # as scripts/build.sh
CC=clang CXX=clang++ cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMSGX_FUZZ=ON -DMSGX_BUILD_BENCH=OFF \
  -DMSGX_WERROR=${MSGX_BUILD_WERROR:-${MSGX_WERROR:-OFF}} >/dev/null
cmake --build "$BUILD_DIR" -j"${MSGX_BUILD_JOBS:-2}" --target msgx_sis_decoder_fuzz

CORPUS_SRC=${MSGX_TEST_CORPUS_DIR:-tests/corpus/sis}
WORK="$BUILD_DIR/fuzz-corpus"
if [[ "$MODE" == smoke ]]; then
  WORK="$BUILD_DIR/fuzz-corpus-smoke"
  rm -rf "$WORK"
fi
mkdir -p "$WORK" "$BUILD_DIR/artifacts"
cp -n "$CORPUS_SRC"/*.xml "$WORK"/ 2>/dev/null || true

# UBSan: any report stops the run, except the documented third-party one.
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$PWD/fuzz/ubsan.supp"
exec "$BUILD_DIR/fuzz/msgx_sis_decoder_fuzz" "$WORK" \
  -dict=fuzz/sis.dict -max_total_time="$SECONDS_TOTAL" -max_len=65536 \
  -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
  -artifact_prefix="$BUILD_DIR/artifacts/"
