#!/usr/bin/env bash
# Script test: `cmake --install` of this build into a temporary prefix puts
# the binary, the migrations, the corpus, the configuration and the systemd
# unit (Type=notify, WatchdogSec=, Restart=on-failure, a dedicated user,
# hardening) there;
# the installed binary finds its migrations and corpus next to itself, not
# in the source tree; it migrates a throwaway PostgreSQL (`msgx dev up`),
# and started with the installed unit's ExecStart command line under a
# NOTIFY_SOCKET (and WATCHDOG_USEC) it says READY=1 once HTTP serves, pings
# WATCHDOG=1, processes the corpus, and on SIGTERM says STOPPING=1 and
# exits 0. Cleans up on any failure (trap).
#
# Usage: install.sh path/to/build/app/msgx
set -euo pipefail
MSGX_BUILT=$(realpath "${1:?usage: $0 path/to/build/app/msgx}")
BUILD=$(dirname "$(dirname "$MSGX_BUILT")")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
[[ -f $BUILD/CMakeCache.txt ]] || { echo "FAIL: no build tree at $BUILD" >&2; exit 1; }

source "$(dirname "$0")/lib/dev_test.sh"
unset NOTIFY_SOCKET
TMP=$(scratch_dir install)
PREFIX=$TMP/prefix
MSGX=$PREFIX/bin/msgx
RUN_PID=
LISTENER_PID=

cleanup() {
  local rc=$?
  [[ -n $RUN_PID ]] && kill -KILL "$RUN_PID" 2>/dev/null || true
  [[ -n $LISTENER_PID ]] && kill "$LISTENER_PID" 2>/dev/null || true
  if [[ -x $MSGX ]]; then MSGX_DEV_DIR=$TMP/dev "$MSGX" dev down >/dev/null 2>&1 || true; fi
  if [[ $rc != 0 && -f $TMP/run.log ]]; then tail -20 "$TMP/run.log" >&2; fi
  rm -rf "$TMP"
  exit "$rc"
}
trap cleanup EXIT

cmake --install "$BUILD" --prefix "$PREFIX" >"$TMP/install.log" || fail "cmake --install: $(cat "$TMP/install.log")"

# What is where.
[[ -x $MSGX ]] || fail "no $MSGX"
want_sql=$(cd "$SRC/migrations" && ls V*__*.sql | sort)
got_sql=$(cd "$PREFIX/share/msgx/migrations" && ls | sort)
[[ $got_sql == "$want_sql" ]] || fail "installed migrations '$got_sql', want '$want_sql'"
[[ $(ls "$PREFIX/share/msgx/corpus" | wc -l) == $(ls "$SRC/tests/corpus/sis" | wc -l) ]] \
  || fail "the corpus is not installed whole"
cmp -s "$SRC/etc/msgx.yaml" "$PREFIX/etc/msgx/msgx.yaml" || fail "no etc/msgx/msgx.yaml"
cmp -s "$SRC/etc/msgx.yaml" "$PREFIX/share/msgx/msgx.example.yaml" || fail "no msgx.example.yaml"
grep -q '^u msgx ' "$PREFIX/lib/sysusers.d/msgx.conf" || fail "no sysusers.d entry for msgx"
UNIT=$PREFIX/lib/systemd/system/msgx.service
[[ -f $UNIT ]] || fail "no $UNIT"
for line in Type=notify NotifyAccess=main WatchdogSec=120s Restart=on-failure User=msgx StateDirectory=msgx \
            NoNewPrivileges=yes ProtectSystem=strict ProtectHome=yes PrivateTmp=yes \
            "CapabilityBoundingSet=" "EnvironmentFile=-$PREFIX/etc/msgx/msgx.env"; do
  grep -qxF "$line" "$UNIT" || fail "the unit has no line '$line'"
done
EXEC=$(sed -n 's/^ExecStart=//p' "$UNIT")
[[ $EXEC == "$MSGX run --config $PREFIX/etc/msgx/msgx.yaml" ]] || fail "ExecStart is '$EXEC'"
! grep -q '@MSGX_' "$UNIT" || fail "an unreplaced @MSGX_…@ in the unit"

# An operator's configuration survives a second install.
echo "# edited" >>"$PREFIX/etc/msgx/msgx.yaml"
cmake --install "$BUILD" --prefix "$PREFIX" >/dev/null
grep -q '^# edited' "$PREFIX/etc/msgx/msgx.yaml" || fail "a second install overwrote msgx.yaml"

# The installed binary's defaults point into the prefix.
"$MSGX" migrate --help | grep -qF "$PREFIX/share/msgx/migrations" \
  || fail "migrate's default is not the installed migrations: $("$MSGX" migrate --help)"
"$MSGX" dev load --help | grep -qF "$PREFIX/share/msgx/corpus" \
  || fail "dev load's default is not the installed corpus: $("$MSGX" dev load --help)"
"$MSGX" --version | grep -q '^schema version ' || fail "--version"

# Throwaway services; migrate with the installed configuration file plus the
# environment an EnvironmentFile would give.
export MSGX_DEV_DIR=$TMP/dev
"$MSGX" dev up >/dev/null
eval "$("$MSGX" dev env)"
export MSGX_STATE_DIR=$TMP/state MSGX_HTTP_LISTEN=127.0.0.1:0
CONF=(--config "$PREFIX/etc/msgx/msgx.yaml")
out=$("$MSGX" "${CONF[@]}" migrate) || fail "migrate: $out"
[[ $out == *"applied V1__init.sql"* && $out == *"0 already applied"* ]] || fail "migrate: $out"
out=$("$MSGX" "${CONF[@]}" migrate) || fail "second migrate: $out"
[[ $out == *"0 applied now"* ]] || fail "second migrate: $out"
loaded=$("$MSGX" "${CONF[@]}" dev load) || fail "dev load: $loaded"
rows=$(psql "$MSGX_MAILBOX_URL" -XAtc 'SELECT count(*) FROM cminmsgs')
(( rows > 100 )) || fail "the installed corpus loaded $rows rows: $loaded"

# The service manager's side of sd_notify: a datagram socket, one line per
# message (perl-base is in every Debian).
export NOTIFY_SOCKET=$TMP/notify.sock
perl -MIO::Socket::UNIX -e '
  $|=1; my $s = IO::Socket::UNIX->new(Type => SOCK_DGRAM, Local => $ARGV[0]) or die "$!";
  open(my $o, ">>", $ARGV[1]) or die; $o->autoflush(1);
  while (defined $s->recv(my $m, 4096)) { print $o "$m\n"; }' "$NOTIFY_SOCKET" "$TMP/notify.log" &
LISTENER_PID=$!
for _ in $(seq 100); do [[ -S $NOTIFY_SOCKET ]] && break; sleep 0.1; done
[[ -S $NOTIFY_SOCKET ]] || fail "the notify listener did not start"

# As systemd gives WatchdogSec= to the service (2 s here: a ping every second).
# shellcheck disable=SC2086  # ExecStart is a command line, split as systemd splits it
WATCHDOG_USEC=2000000 $EXEC 2>"$TMP/run.log" &
RUN_PID=$!
for _ in $(seq 300); do grep -q '^READY=1$' "$TMP/notify.log" 2>/dev/null && break; sleep 0.1; done
grep -q '^READY=1$' "$TMP/notify.log" || fail "no READY=1: $(cat "$TMP/notify.log" 2>/dev/null)"
port=$(sed -n 's/^STATUS=http on port \([0-9]*\).*/\1/p' "$TMP/notify.log" | head -1)
[[ -n $port ]] || fail "no STATUS with the port: $(cat "$TMP/notify.log")"
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz") == 200 ]] \
  || fail "/healthz does not answer 200 after READY=1"
done_rows=0
for _ in $(seq 600); do
  done_rows=$(psql "$MSGX_POSTGRES_URL" -XAtc 'SELECT count(*) FROM proc_state' 2>/dev/null || echo 0)
  (( done_rows >= rows )) && break
  sleep 0.1
done
(( done_rows >= rows )) || fail "$done_rows of $rows outcomes in proc_state"
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/readyz") == 200 ]] \
  || fail "/readyz: $(curl -s "http://127.0.0.1:$port/readyz")"

kill -TERM "$RUN_PID"
rc=0; wait "$RUN_PID" || rc=$?
RUN_PID=
[[ $rc == 0 ]] || fail "msgx run exited $rc after SIGTERM"
grep -q '^STOPPING=1$' "$TMP/notify.log" || fail "no STOPPING=1: $(cat "$TMP/notify.log")"
pings=$(grep -c '^WATCHDOG=1$' "$TMP/notify.log" || true)
(( pings >= 2 )) || fail "$pings WATCHDOG=1 with WATCHDOG_USEC=2000000: $(cat "$TMP/notify.log")"
echo "install: ok ($rows rows through the installed msgx)"
