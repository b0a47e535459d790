#!/usr/bin/env bash
# `make test`: installs what is missing, checks formatting, starts a throwaway PostgreSQL in a
# temporary directory on a free port, runs every test against it, and stops it whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test

echo "== swift format lint"
swift format lint --strict --recursive --parallel Package.swift Sources Tests
echo "format lint: clean"

# shellcheck source=scripts/throwaway-postgres.sh
. scripts/throwaway-postgres.sh
echo "== starting a throwaway PostgreSQL"
start_throwaway_postgres
export HERALD_TEST_POSTGRES_URL=$THROWAWAY_PG_URL
export HERALD_TEST_PG_BIN=$THROWAWAY_PG_BIN
echo "PostgreSQL ready at $HERALD_TEST_POSTGRES_URL"

echo "== swift test"
swift build --build-tests
swift test --skip-build --verbose "$@"
