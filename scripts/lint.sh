#!/usr/bin/env bash
# Style checks.
#   scripts/lint.sh            clang-format check of every C++ file (fast; test.sh runs it)
#   scripts/lint.sh tidy [F…]  clang-tidy (.clang-tidy) on F…, or on the .cc files changed
#                              since MSGX_TIDY_BASE (default: origin/main when HEAD is ahead
#                              of it, else HEAD~1: a fresh clone checks its newest commit);
#                              warnings are errors; needs build/compile_commands.json.
#                              test.sh runs it after the build.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-format}
mapfile -t all < <(git ls-files '*.h' '*.cc')
case "$mode" in
  format)
    clang-format --dry-run -Werror "${all[@]}"
    echo "lint: clang-format clean (${#all[@]} files)"
    ;;
  tidy)
    shift || true
    files=("$@")
    if ((${#files[@]} == 0)); then
      base=${MSGX_TIDY_BASE:-}
      if [[ -z "$base" ]]; then
        upstream=$(git rev-parse -q --verify origin/main || true)
        if [[ -n "$upstream" && "$upstream" != "$(git rev-parse HEAD)" ]]; then
          base=$upstream
        else
          base=$(git rev-parse -q --verify HEAD~1 || git rev-parse HEAD)
        fi
      fi
      mapfile -t files < <(git diff --name-only --diff-filter=AMR "$base" -- '*.cc')
    fi
    build=${MSGX_BUILD_DIR:-build}
    [[ -f "$build/compile_commands.json" ]] || bash scripts/build.sh >/dev/null
    if ((${#files[@]} == 0)); then
      echo "lint: clang-tidy: no changed .cc files"
    else
      clang-tidy -p "$build" --quiet --warnings-as-errors='*' "${files[@]}"
      echo "lint: clang-tidy clean (${#files[@]} changed files)"
    fi
    ;;
  *) echo "usage: lint.sh [format | tidy [FILE…]]" >&2; exit 2 ;;
esac
