#!/usr/bin/env bash
# `make run`: starts the release build of Herald in the foreground. On a terminal the server gets
# the terminal to itself (its own process group), so Ctrl-C reaches Herald alone: it shuts down
# gracefully and `make run` exits with Herald's status (0) instead of make's "Interrupt".
set -euo pipefail
binary=${HERALD_BIN:-.build/release/herald}
export PORT=${PORT:-3000}
export DATABASE_URL=${DATABASE_URL:-sqlite:herald.sqlite}
if [ -t 0 ]; then
  set -m
  "$binary" serve "$@" &
  fg %1 >/dev/null
else
  exec "$binary" serve "$@"
fi
