# Sourced by scripts/contract-test.sh, scripts/admin-test.sh and Benchmarks/admin.sh:
# `start_simulator_server HERALD WORK [VARIABLE=value ...]` starts `herald serve --simulator` on a
# free loopback port with SQLite at WORK/herald.sqlite, in WORK, with only PATH, HOME, TMPDIR and
# the given variables in its environment, logging to WORK/serve.log. It sets `server_pid` and
# `port`, or prints the log and exits 1 when the server stops or does not listen within 60 s.
# The caller stops it (`kill "$server_pid"`) in its own exit trap.
# shellcheck shell=bash
start_simulator_server() {
    local herald=$1 work=$2
    shift 2
    (cd "$work" && exec env -i PATH="$PATH" HOME="$work" TMPDIR="$work" "$@" \
        "$herald" serve --simulator --host 127.0.0.1 --port 0 --database-url "sqlite:$work/herald.sqlite" \
        >"$work/serve.log" 2>&1) &
    server_pid=$!
    port=
    for _ in $(seq 600); do
        port=$(grep -m1 -oE 'herald listening address=http://127\.0\.0\.1:[0-9]+' "$work/serve.log" 2>/dev/null | sed 's/.*://' || true)
        [ -n "$port" ] && return 0
        kill -0 "$server_pid" 2>/dev/null || { echo "herald serve stopped; its log:" >&2; cat "$work/serve.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "herald serve did not start within 60 s; its log:" >&2
    cat "$work/serve.log" >&2
    exit 1
}
