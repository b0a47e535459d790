#!/usr/bin/env bash
# `make run`: starts the release build of Herald in the foreground. On a terminal the server gets
# the terminal to itself (its own process group), so Ctrl-C reaches Herald alone: it shuts down
# gracefully and `make run` exits with Herald's status (0) instead of make's "Interrupt".
set -euo pipefail
binary=${HERALD_BIN:-.build/release/herald}
export PORT=${PORT:-3000}
export DATABASE_URL=${DATABASE_URL:-sqlite:herald.sqlite}
args=("$@")
if [ -z "${APNS_AUTH_KEY:-}${APNS_AUTH_KEY_FILE:-}${HERALD_APPS_FILE:-}" ]; then
  echo "make run: no Apple credentials configured (APNS_AUTH_KEY, APNS_AUTH_KEY_FILE or HERALD_APPS_FILE):"
  echo "make run: starting with the built-in APNs simulator; nothing is sent to Apple."
  args=(--simulator "${args[@]}")
fi
if [ -t 0 ]; then
  set -m
  "$binary" serve "${args[@]}" &
  fg %1 >/dev/null
else
  exec "$binary" serve "${args[@]}"
fi
