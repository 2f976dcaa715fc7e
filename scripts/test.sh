#!/usr/bin/env bash
# The test command: installs missing packages (idempotent), checks formatting,
# builds, runs clang-tidy on the changed .cc files, runs a short fuzz pass
# over the corpus, then every test through ctest: unit tests,
# integration tests against real PostgreSQL/Redis/Kafka-mock servers that the
# tests start themselves, and script tests. ctest's summary is the last line.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${MSGX_BUILD_DIR:-build}
bash scripts/install-deps.sh
bash scripts/lint.sh
bash scripts/build.sh
if [[ -z "${MSGX_TEST_SKIP_TIDY:-}" ]]; then
  bash scripts/lint.sh tidy  # clang-tidy on the changed .cc files (STYLE.md)
fi
if [[ -f scripts/fuzz.sh && -z "${MSGX_TEST_SKIP_FUZZ:-}" ]]; then
  bash scripts/fuzz.sh smoke
fi
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
