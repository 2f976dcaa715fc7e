#!/usr/bin/env bash
# Script test: bench_quick.sh with the mailbox on the dev MariaDB server
# (`msgx bench --mailbox mariadb`): the bench's writer and its baseline work
# on a MariaDB mailbox as on PostgreSQL, with the same checks.
# Usage: bench_quick_mariadb.sh path/to/msgx
set -euo pipefail
exec bash "$(dirname "$0")/bench_quick.sh" "${1:?usage: $0 path/to/msgx}" mariadb
