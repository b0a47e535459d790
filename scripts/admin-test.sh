#!/usr/bin/env bash
# The admin console's browser test (`make test`): starts `herald serve --simulator` (SQLite in a
# temporary directory, loopback only), and drives headless Chromium over WebDriver through every
# page with Tests/Browser/admin_console.py, from the virtual environment scripts/bootstrap.sh
# --test makes (selenium; Debian's chromium and chromium-driver). Saves a screenshot of each page.
# Usage: scripts/admin-test.sh [HERALD] [--readme]
#   ADMIN_SCREENSHOTS  where the screenshots go (default .build/admin-screenshots, not committed)
#   --readme           also copies the overview and a Live Activity's page to docs/images/, the
#                      README's two screenshots: the one command that regenerates them
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/serve-simulator.sh
herald=
readme=
for argument in "$@"; do
    case "$argument" in
        --readme) readme=1 ;;
        *) herald=$argument ;;
    esac
done
herald=${herald:-$(swift build --show-bin-path)/herald}
[ -x "$herald" ] || { echo "admin test: no herald executable at $herald (run swift build first)" >&2; exit 1; }
herald=$(cd "$(dirname "$herald")" && pwd)/$(basename "$herald")
venv=${HERALD_TEST_VENV:-$HOME/.cache/herald/test-venv}
[ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import selenium' 2>/dev/null \
    || { echo "admin test: no selenium in $venv (run scripts/bootstrap.sh --test)" >&2; exit 1; }
for tool in chromium chromedriver; do
    command -v "$tool" >/dev/null || { echo "admin test: no $tool (run scripts/bootstrap.sh --test)" >&2; exit 1; }
done
shots=${ADMIN_SCREENSHOTS:-.build/admin-screenshots}
mkdir -p "$shots"
shots=$(cd "$shots" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/herald-admin.XXXXXX")
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [ -n "${ADMIN_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
read_only=ro-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# Plain HTTP on loopback: the cookie goes without Secure, as HERALD_ADMIN_INSECURE_COOKIE=1 allows.
# A webhook to a closed loopback port shows a failing receiver: private http:// destinations allowed.
start_simulator_server "$herald" "$work" HERALD_API_KEYS="$key" HERALD_ADMIN_READONLY_KEYS="$read_only" \
    HERALD_ADMIN_INSECURE_COOKIE=1 HERALD_CLIENT_TOKEN_SECRET="$secret" \
    HERALD_WEBHOOK_ALLOW_PRIVATE=1 HERALD_WEBHOOK_ALLOW_HTTP=1
token=$(HERALD_CLIENT_TOKEN_SECRET="$secret" "$herald" client-token --user ann --ttl 1h)
echo "admin test: herald serve --simulator on :$port, Chromium $(chromium --version 2>/dev/null | awk '{print $2}')"
if ! SE_OFFLINE=true HOME="$work" "$venv/bin/python" Tests/Browser/admin_console.py "http://127.0.0.1:$port" "$key" \
    "$read_only" "$token" "$work/herald.sqlite" "$shots"; then
    echo "admin test: herald serve's log:" >&2
    tail -50 "$work/serve.log" >&2
    exit 1
fi
if [ -n "$readme" ]; then
    cp "$shots/admin-overview.png" "$shots/admin-live-activity.png" docs/images/
    echo "admin test: docs/images/admin-overview.png and admin-live-activity.png regenerated"
fi
