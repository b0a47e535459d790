#!/usr/bin/env bash
# The job queue benchmark (issue 6): schedules COUNT jobs (most due in 30 days), drains a backlog
# of BACKLOG due jobs, then feeds RATE jobs/s for DURATION s and reports due-to-start p50/p99,
# on SQLite (one instance, in process) and on PostgreSQL with INSTANCES worker processes.
# Target on PostgreSQL: p99 due-to-start under 1 s while sustaining 2,000 jobs/s.
#   COUNT=1000000 BACKLOG=100000 RATE=2000 DURATION=30 INSTANCES=2 Benchmarks/jobs-queue.sh
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test >/dev/null
swift build -c release --product herald >/dev/null
herald=.build/release/herald
args=(--count "${COUNT:-1000000}" --backlog "${BACKLOG:-100000}" --rate "${RATE:-2000}" --duration "${DURATION:-30}")

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== SQLite (WAL, one instance)"
sqlite_dir=$(mktemp -d /tmp/herald-jobs-bench.XXXXXX)
"$herald" jobs bench --database-url "sqlite:$sqlite_dir/bench.sqlite" "${args[@]}" --instances 0
rm -rf "$sqlite_dir"

echo "== PostgreSQL (fsync on, ${INSTANCES:-2} worker processes)"
# shellcheck source=scripts/throwaway-postgres.sh
. scripts/throwaway-postgres.sh
PG_FSYNC=on start_throwaway_postgres
"$herald" jobs bench --database-url "$THROWAWAY_PG_URL?pool_size=4" "${args[@]}" --instances "${INSTANCES:-2}"
