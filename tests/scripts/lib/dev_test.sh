# shellcheck shell=bash
# Sourced by the script tests that start services of their own (`msgx dev
# up` in a scratch directory). Not a test itself: CMake registers only
# tests/scripts/*.sh.
#
# On sourcing it clears every MSGX_ variable, so that the settings of
# another dev directory (a developer's shell, a CI step) cannot leak into
# the test. It defines:
#   fail MESSAGE...   prints "FAIL: MESSAGE" on stderr and exits 1;
#   alive PID         true while PID runs and is not a zombie (a daemon's
#                     zombie lingers until init reaps it);
#   scratch_dir NAME  makes /tmp/msgx-NAME-XXXXXX and prints its path. It is
#                     mode 755: the postgres and mysql users must reach their
#                     data directories below it when the test runs as root.

while IFS= read -r name; do unset "$name"; done < <(compgen -e | grep '^MSGX_' || true)

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

alive() { kill -0 "$1" 2>/dev/null && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }

scratch_dir() {
  local dir
  dir=$(mktemp -d "/tmp/msgx-$1-XXXXXX")
  chmod 755 "$dir"
  echo "$dir"
}
