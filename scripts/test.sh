#!/usr/bin/env bash
# `make test`: installs what is missing, checks formatting, starts a throwaway PostgreSQL in a
# temporary directory on a free port, runs every test against it, and stops it whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh --test

# Test traffic stays on loopback, even when the code under test is wrong: everything after the
# installs runs in a network namespace of its own whose only interface is loopback, so a DNS
# query for a webhook's host or a connect to a generated URL fails at once instead of leaving the
# machine. Where no namespace can be made (not root, or no CAP_SYS_ADMIN), the run goes on in the
# machine's own network and says so.
if [ -z "${HERALD_TEST_ISOLATED:-}" ]; then
  if unshare --net ip link set lo up 2>/dev/null; then
    echo "== isolating the run: a network namespace with loopback only"
    exec unshare --net env HERALD_TEST_ISOLATED=1 bash -c 'ip link set lo up && exec "$0" "$@"' "$0" "$@"
  fi
  echo "note: no network namespace could be made here; the tests run in the machine's network"
fi

echo "== swift format lint"
swift format lint --strict --recursive --parallel Package.swift Sources Tests
echo "format lint: clean"

# shellcheck source=scripts/throwaway-postgres.sh
. scripts/throwaway-postgres.sh
echo "== starting a throwaway PostgreSQL"
start_throwaway_postgres
export HERALD_TEST_POSTGRES_URL=$THROWAWAY_PG_URL
export HERALD_TEST_PG_BIN=$THROWAWAY_PG_BIN
# libpq built with GSSAPI asks Kerberos for credentials on every TCP connect. A test's database
# cleanup still connecting when the test process exits then runs into Kerberos after its
# destructors ran, and the process aborts (krb5int_getspecific assertion) after every test
# passed. The throwaway server trusts loopback; it has no use for GSS encryption.
export PGGSSENCMODE=disable
echo "PostgreSQL ready at $HERALD_TEST_POSTGRES_URL"

# A test run that falls silent for HERALD_TEST_SILENCE_LIMIT seconds (default 600) is a hang: the
# watchdog names the tests still running, saves every thread's backtrace and fails the run.
watchdog=scripts/test-watchdog.py

echo "== swift test"
swift build --build-tests
"$watchdog" -- swift test --skip-build --verbose "$@"

# Every example in README.md and docs/ runs as written (scripts/doctest.sh says how they are marked).
echo "== documentation examples"
scripts/doctest.sh "$(swift build --show-bin-path)/herald"

# The API description is true: schemathesis sends generated requests for every /v1 operation of
# GET /v1/openapi.json to a live herald serve --simulator and checks every answer against it.
echo "== contract test (schemathesis against /v1/openapi.json)"
scripts/contract-test.sh "$(swift build --show-bin-path)/herald"

# The admin console in a real browser: headless Chromium over WebDriver through every page, with a
# screenshot of each under .build/admin-screenshots.
echo "== admin console (headless Chromium)"
scripts/admin-test.sh "$(swift build --show-bin-path)/herald"

# The executable must run on jemalloc (README, "Endpoints and metrics"): every malloc and free the
# dynamic linker binds must go to libjemalloc, not to Glibc.
echo "== the herald executable's allocator"
herald=$(swift build --show-bin-path)/herald
version=$("$herald" --version)
grep -q '(jemalloc ' <<<"$version" || { echo "herald --version does not name jemalloc: $version" >&2; exit 1; }
bindings=$(LD_DEBUG=bindings "$herald" --version 2>&1 >/dev/null | grep -E "normal symbol \`(malloc|free)'" || true)
[ -n "$bindings" ] || { echo "no malloc/free bindings seen (LD_DEBUG)" >&2; exit 1; }
# "binding file A [0] to B [0]: normal symbol `malloc'": B is where the symbol was found.
elsewhere=$(sed -E 's/.* to ([^ ]+) \[.*/\1/' <<<"$bindings" | grep -v '/libjemalloc\.so' || true)
[ -z "$elsewhere" ] || { echo "malloc or free bound outside libjemalloc: $(sort -u <<<"$elsewhere")" >&2; exit 1; }
echo "allocator: $(sed 's/.*(\(.*\))/\1/' <<<"$version"), $(wc -l <<<"$bindings") malloc/free bindings, all to libjemalloc"

# The service unit must pass systemd-analyze verify. verify also requires ExecStart's binary to
# exist, and /usr/local/bin/herald need not on a build machine: so it checks a copy of the unit
# whose ExecStart names the binary just built, every other line unchanged.
echo "== systemd-analyze verify contrib/herald.service"
unit_dir=$(mktemp -d)
sed "s|^ExecStart=/usr/local/bin/herald |ExecStart=$herald |" contrib/herald.service >"$unit_dir/herald.service"
grep -q "^ExecStart=$herald serve" "$unit_dir/herald.service" || { echo "herald.service: no ExecStart=/usr/local/bin/herald serve" >&2; exit 1; }
systemd-analyze verify "$unit_dir/herald.service"
rm -rf "$unit_dir"
echo "herald.service: verified"

# `make install` puts a working herald in PREFIX/bin (here under a temporary DESTDIR). It installs
# the debug build just made (same install steps; the release build has its own stage below).
echo "== make install"
install_root=$(mktemp -d)
make --no-print-directory install CONFIG=debug DESTDIR="$install_root"
"$install_root/usr/local/bin/herald" --version
rm -rf "$install_root"

# `make run` serves the release build, which the debug build above does not vouch for: the
# optimizer has crashed on code the debug build compiled (Swift 6.3.1 on `JSONObjectReader`), and
# only a release build shows it. So the README's first command is built here as it builds it.
echo "== make release (what make run serves)"
make --no-print-directory release
"$(swift build -c release --show-bin-path)/herald" --version

# Memory errors and data races are found by tools, not by reading: the suites of the modules that
# hold C pointers (event loop and TLS, the HTTP/2 client and server, the APNs client, the
# libmicrohttpd server, SQLite and libpq) run once under AddressSanitizer and
# once under ThreadSanitizer, each build in its own scratch path. Any report fails the run (ASan
# stops at the first one; TSan exits 66 after its first one).
# LeakSanitizer runs with AddressSanitizer: memory still reachable only from other leaked memory
# at exit (a reference cycle) fails the run like any leak. scripts/lsan-suppressions.txt lists
# XCTest's own, no others.
# The fuzz corpus replay (every saved input through the parsers, the fuzz targets' code) runs
# under AddressSanitizer only: the harnesses parse on one thread, so ThreadSanitizer has nothing
# to look at there, while an out-of-bounds read in a parser is what AddressSanitizer exists for.
sanitized_suites='HeraldIOTests|HTTP2Tests|APNsTests|HTTPServerTests|StorageTests|GroupCommitTests|WebhookDeliveryTests'
address_only_suites='FuzzReplayTests'
export ASAN_OPTIONS=halt_on_error=1:exitcode=66:detect_leaks=1
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1:suppressions=$PWD/scripts/tsan-suppressions.txt"
export LSAN_OPTIONS="suppressions=$PWD/scripts/lsan-suppressions.txt"
for sanitizer in address thread; do
    suites=$sanitized_suites
    [ "$sanitizer" = address ] && suites="$suites|$address_only_suites"
    echo "== $sanitizer sanitizer: $suites"
    swift build --build-tests --sanitize="$sanitizer" --scratch-path ".build/${sanitizer:0:1}san"
    "$watchdog" -- swift test --skip-build --scratch-path ".build/${sanitizer:0:1}san" --filter "$suites" --verbose
done
