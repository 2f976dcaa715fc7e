#!/usr/bin/env bash
# Style checks.
#   scripts/lint.sh            clang-format check of every C++ file (fast; test.sh runs it)
#   scripts/lint.sh tidy [F…]  clang-tidy (.clang-tidy) on F…, or on the C++ files changed
#                              since origin/main (or HEAD~20); needs build/compile_commands.json
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
      base=$(git rev-parse -q --verify origin/main || git rev-parse HEAD~20)
      mapfile -t files < <(git diff --name-only --diff-filter=AM "$base" -- '*.cc')
    fi
    [[ -f build/compile_commands.json ]] || bash scripts/build.sh >/dev/null
    ((${#files[@]} == 0)) || clang-tidy -p build --quiet "${files[@]}"
    ;;
  *) echo "usage: lint.sh [format | tidy [FILE…]]" >&2; exit 2 ;;
esac
