#!/usr/bin/env bash
# Installs what Herald needs to build and test on Debian 12, and only what is missing.
# Safe to run any number of times. Usage: scripts/bootstrap.sh [--test] [--bench]
#   (no flag)  build dependencies: pkg-config and the C libraries' -dev packages
#   --test     also what `make test` uses: the PostgreSQL server, curl, h2load (nghttp2-client),
#              systemd-analyze (systemd), which checks contrib/herald.service, and for the
#              documentation examples openssl and python3, and gdb for the test
#              watchdog's backtraces, chromium and chromium-driver for the admin console's browser
#              test (scripts/admin-test.sh), iproute2, whose `ip` brings up the loopback interface
#              of the network namespace the tests run in; and a Python virtual environment (python3-venv) holding
#              schemathesis, which the contract test (scripts/contract-test.sh) runs against the
#              OpenAPI description, and selenium, which drives Chromium, at $HERALD_TEST_VENV
#              (default ~/.cache/herald/test-venv)
#   --bench    also wrk, h2o, h2load (nghttp2-client), GNU time, jq, the sqlite3 shell and
#              PostgreSQL (server, psql, pg_dump) whose own insert rate Benchmarks/audience.sh
#              measures beside Herald's, and Go (golang-go), which builds the reference relay
#              Benchmarks/relay-load.sh measures `herald relay` against
set -euo pipefail

packages=(pkg-config libssl-dev libnghttp2-dev libmicrohttpd-dev libsqlite3-dev libpq-dev libjemalloc-dev libcurl4-openssl-dev)
for arg in "$@"; do
  case "$arg" in
    --test) packages+=(postgresql curl nghttp2-client systemd openssl python3 python3-venv gdb chromium chromium-driver iproute2); test_venv=1 ;;
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
# The contract test's schemathesis and the browser test's selenium, pinned, in a virtual
# environment of their own (PyPI's, not Debian's: Debian 12 has neither at these versions). Made
# once; a later run finds them and does nothing.
schemathesis_version=4.32.5
selenium_version=4.27.1
make_test_venv() {
  local venv=${HERALD_TEST_VENV:-$HOME/.cache/herald/test-venv}
  if [ -x "$venv/bin/schemathesis" ] && "$venv/bin/schemathesis" --version 2>/dev/null | grep -q " $schemathesis_version\$" \
    && [ "$("$venv/bin/python" -c 'import selenium; print(selenium.__version__)' 2>/dev/null)" = "$selenium_version" ]; then
    return 0
  fi
  echo "bootstrap: making $venv with schemathesis $schemathesis_version and selenium $selenium_version"
  rm -rf "$venv"
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  "$venv/bin/pip" install --disable-pip-version-check -q "schemathesis==$schemathesis_version" "selenium==$selenium_version"
}

if [ ${#missing[@]} -eq 0 ]; then
  [ -n "${test_venv:-}" ] && make_test_venv
  exit 0
fi

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
[ -n "${test_venv:-}" ] && make_test_venv
exit 0
