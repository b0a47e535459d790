#!/usr/bin/env bash
# Installs what Herald needs to build and test on Debian 12, and only what is missing.
# Safe to run any number of times. Usage: scripts/bootstrap.sh [--test] [--bench]
#   (no flag)  build dependencies: pkg-config and the C libraries' -dev packages
#   --test     also what `make test` uses: the PostgreSQL server, curl, h2load (nghttp2-client),
#              systemd-analyze (systemd), which checks contrib/herald.service, and for the
#              documentation examples openssl and python3, and gdb for the test
#              watchdog's backtraces
#   --bench    also wrk, h2o, h2load (nghttp2-client), GNU time, jq, the sqlite3 shell and
#              PostgreSQL (server, psql, pg_dump) whose own insert rate Benchmarks/audience.sh
#              measures beside Herald's, and Go (golang-go), which builds the reference relay
#              Benchmarks/relay-load.sh measures `herald relay` against
set -euo pipefail

packages=(pkg-config libssl-dev libnghttp2-dev libmicrohttpd-dev libsqlite3-dev libpq-dev libjemalloc-dev libcurl4-openssl-dev)
for arg in "$@"; do
  case "$arg" in
    --test) packages+=(postgresql curl nghttp2-client systemd openssl python3 gdb) ;;
    --bench) packages+=(wrk h2o nghttp2-client curl time jq python3 sqlite3 postgresql golang-go) ;;
    *) echo "bootstrap: unknown argument $arg (use --test or --bench)" >&2; exit 2 ;;
  esac
done

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v swift >/dev/null 2>&1; then
  echo "bootstrap: the Swift toolchain (6.x) must be on PATH; Herald installs everything else" >&2
  exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "bootstrap: installing ${missing[*]} needs root (or sudo)" >&2; exit 1; }
  sudo=(sudo)
fi
echo "bootstrap: installing ${missing[*]}"
"${sudo[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
