#!/usr/bin/env bash
# Configures and builds msgx into ./build (or $MSGX_BUILD_DIR) with -j2.
# MSGX_BUILD_WERROR=ON makes warnings errors (CI sets it); MSGX_BUILD_SANITIZE
# (e.g. address) builds with sanitizers, best in a build dir of its own
# (docs/testing.md#sanitizer-builds). Build knobs use the
# MSGX_BUILD_ prefix, which msgx's configuration loader ignores.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${MSGX_BUILD_DIR:-build}
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}  # share the cache across worktrees
# With -g, ccache hashes the working directory too, so a second checkout
# (a CI clone, a worktree) would miss every object; debug info may then name
# the first checkout's paths, which is harmless.
export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=${MSGX_BUILD_TYPE:-RelWithDebInfo} \
  -DMSGX_WERROR=${MSGX_BUILD_WERROR:-${MSGX_WERROR:-OFF}} \
  -DMSGX_SANITIZE=${MSGX_BUILD_SANITIZE:-} >/dev/null
cmake --build "$BUILD_DIR" -j"${MSGX_BUILD_JOBS:-2}" "$@"
