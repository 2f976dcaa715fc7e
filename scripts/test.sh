#!/usr/bin/env bash
# The test command: builds, then runs every test (unit, integration against
# real PostgreSQL/Redis/Kafka-mock started by the tests themselves, script
# tests), then a short fuzz pass over the corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${MSGX_BUILD_DIR:-build}
bash scripts/build.sh
ctest --test-dir "$BUILD_DIR" --output-on-failure "$@"
if [[ -x scripts/fuzz.sh && -z "${MSGX_TEST_SKIP_FUZZ:-}" ]]; then
  bash scripts/fuzz.sh smoke
fi
