# Sourced by scripts/test.sh and Benchmarks/*.sh: `start_throwaway_postgres` starts a PostgreSQL
# server in a temporary directory on a free port (as the postgres user when run as root), sets
# THROWAWAY_PG_URL and THROWAWAY_PG_BIN, and stops it and removes the directory on exit.
# PG_FSYNC=on keeps fsync (benchmarks of durable writes); tests run with fsync off.

start_throwaway_postgres() {
  throwaway_pg_bin=${HERALD_TEST_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
  if [ -z "$throwaway_pg_bin" ] || [ ! -x "$throwaway_pg_bin/initdb" ]; then
    echo "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin" >&2
    return 1
  fi
  throwaway_pg_dir=$(mktemp -d /tmp/herald-pg.XXXXXX)
  throwaway_as_pg=()
  if [ "$(id -u)" -eq 0 ]; then
    # PostgreSQL refuses to run as root: run it as the postgres user the package created.
    chown postgres:postgres "$throwaway_pg_dir"
    throwaway_as_pg=(runuser -u postgres --)
  fi
  trap stop_throwaway_postgres EXIT
  "${throwaway_as_pg[@]}" "$throwaway_pg_bin/initdb" -D "$throwaway_pg_dir/data" -A trust -U postgres -E UTF8 \
    --no-sync >"$throwaway_pg_dir/initdb.log" 2>&1 || { cat "$throwaway_pg_dir/initdb.log" >&2; return 1; }
  local attempt port started=
  for attempt in 1 2 3 4 5; do
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' \
      2>/dev/null || echo $((20000 + RANDOM % 30000)))
    if "${throwaway_as_pg[@]}" "$throwaway_pg_bin/pg_ctl" -D "$throwaway_pg_dir/data" \
        -l "$throwaway_pg_dir/server.log" -w -t 30 \
        -o "-p $port -k $throwaway_pg_dir -c listen_addresses=127.0.0.1 -c fsync=${PG_FSYNC:-off} -c max_connections=500" \
        start >/dev/null; then
      started=1
      break
    fi
  done
  [ -n "$started" ] || { echo "PostgreSQL did not start" >&2; cat "$throwaway_pg_dir/server.log" >&2; return 1; }
  THROWAWAY_PG_URL="postgres://postgres@127.0.0.1:$port/postgres"
  THROWAWAY_PG_BIN=$throwaway_pg_bin
}

stop_throwaway_postgres() {
  [ -n "${throwaway_pg_dir:-}" ] || return 0
  "${throwaway_as_pg[@]}" "$throwaway_pg_bin/pg_ctl" -D "$throwaway_pg_dir/data" -m immediate stop \
    >/dev/null 2>&1 || true
  rm -rf "$throwaway_pg_dir"
}
