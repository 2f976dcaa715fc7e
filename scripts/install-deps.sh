#!/usr/bin/env bash
# Installs every Debian package msgx's build, tests, fuzzing and quickstart
# need. Idempotent: packages already present are left alone, and apt's lists
# are refreshed only when something is missing.
set -euo pipefail

PACKAGES=(
  # toolchain
  build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev
  clang-format clang-tidy
  # libraries (the stack)
  librdkafka-dev librocksdb-dev libpqxx-dev libmariadb-dev libhiredis-dev
  libflatbuffers-dev flatbuffers-compiler libsimdjson-dev libpugixml-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libcpp-httplib-dev libcli11-dev libspdlog-dev libfmt-dev libyaml-cpp-dev rapidjson-dev
  libssl-dev zlib1g-dev libzstd-dev liblz4-dev libsnappy-dev libbz2-dev
  # metrics: prometheus-cpp's core behind GET /metrics; the prometheus
  # package only for its promtool, which tests the exposition and the rules
  prometheus-cpp-dev prometheus
  libsystemd-dev
  # services and outside clients for tests and `msgx dev up`
  postgresql-15 postgresql-client-15 mariadb-server mariadb-client redis-server redis-tools kcat
  tzdata procps util-linux
  # `msgx bench` draws its charts with gnuplot
  gnuplot-nox
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#PACKAGES[@]} packages present"
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; fi
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian creates and starts a default cluster, MariaDB, redis and prometheus
# services on install; msgx never uses them (tests and `msgx dev up` run their own on free ports).
