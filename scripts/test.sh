#!/usr/bin/env bash
# `make test`: installs what is missing, checks formatting, starts a throwaway PostgreSQL in a
# temporary directory on a free port, runs every test against it, and stops it whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test

echo "== swift format lint"
swift format lint --strict --recursive --parallel Package.swift Sources Tests
echo "format lint: clean"

pg_bin=${HERALD_TEST_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then
  echo "test: PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin" >&2
  exit 1
fi

pg_dir=$(mktemp -d /tmp/herald-pg.XXXXXX)
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  # PostgreSQL refuses to run as root: run it as the postgres user the package created.
  chown postgres:postgres "$pg_dir"
  as_pg=(runuser -u postgres --)
fi
stop_pg() {
  "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$pg_dir"
}
trap stop_pg EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null \
    || echo $((20000 + RANDOM % 30000))
}

echo "== starting a throwaway PostgreSQL ($pg_bin)"
"${as_pg[@]}" "$pg_bin/initdb" -D "$pg_dir/data" -A trust -U postgres -E UTF8 --no-sync >"$pg_dir/initdb.log" 2>&1 \
  || { cat "$pg_dir/initdb.log" >&2; exit 1; }
started=
for attempt in 1 2 3 4 5; do
  pg_port=$(free_port)
  if "${as_pg[@]}" "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 30 \
      -o "-p $pg_port -k $pg_dir -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200" start >/dev/null; then
    started=1
    break
  fi
done
[ -n "$started" ] || { echo "test: PostgreSQL did not start" >&2; cat "$pg_dir/server.log" >&2; exit 1; }
export HERALD_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$pg_port/postgres"
export HERALD_TEST_PG_BIN="$pg_bin"
echo "PostgreSQL ready at $HERALD_TEST_POSTGRES_URL"

echo "== swift test"
swift build --build-tests
swift test --skip-build --verbose "$@"
