#!/usr/bin/env bash
# Fan-out (issue 6): one POST /v1/notifications with TOKENS device tokens (default 10,000) to a
# `herald serve` whose APNs is a `herald simulator`; the time from the POST to the last per-token
# result is reported next to `herald bench` sending as many pushes to the same simulator with the
# same credentials, in the same run (ROUNDS alternating rounds, medians).
#   TOKENS=10000 ROUNDS=3 DATABASE_URL=sqlite:… HERALD=.build/release/herald Benchmarks/fanout.sh
set -euo pipefail
cd "$(dirname "$0")/.."
tokens=${TOKENS:-10000}
rounds=${ROUNDS:-3}
herald=${HERALD:-.build/release/herald}
[ -x "$herald" ] || swift build -c release --product herald >/dev/null
work=$(mktemp -d /tmp/herald-fanout.XXXXXX)
cleanup() {
  for pid in ${serve_pid:-} ${simulator_pid:-}; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 200); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; cat "$1" >&2; return 1; }

openssl ecparam -genkey -name prime256v1 -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/key.p8"
export APNS_AUTH_KEY_FILE="$work/key.p8" APNS_KEY_ID=BENCHKEY01 APPLE_TEAM_ID=BENCHTEAM1 TOPIC=com.example.bench
"$herald" simulator --port 0 --control-port 0 --key "$APNS_KEY_ID:$APNS_AUTH_KEY_FILE" --team "$APPLE_TEAM_ID" \
  --topic "$TOPIC" --cert-out "$work/ca.pem" >"$work/simulator.log" 2>&1 &
simulator_pid=$!
wait_for "$work/simulator.log" "APNs URL"
apns_url=$(grep -oE 'APNs URL +https://[0-9.:]+' "$work/simulator.log" | grep -oE 'https://[0-9.:]+')
export APNS_CA_FILE="$work/ca.pem" APNS_PRODUCTION_URL="$apns_url" APNS_SANDBOX_URL="$apns_url"

port=$(free_port)
PORT=$port HOST=127.0.0.1 DATABASE_URL=${DATABASE_URL:-sqlite:$work/herald.sqlite} HERALD_API_KEYS=fanout-bench-key-0123456789 \
  LOG_LEVEL=warning "$herald" serve >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 200); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.05; done
curl -sf "http://127.0.0.1:$port/healthz" >/dev/null || { echo "fanout: herald serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1; }

python3 - "$tokens" >"$work/request.json" <<'PY'
import json, os, sys
count = int(sys.argv[1])
tokens = [os.urandom(32).hex() for _ in range(count)]
print(json.dumps({"tokens": tokens, "payload": {"aps": {"alert": {"title": "Herald", "body": "Fan-out"}}}}))
PY

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
fanout=(); bench=()
for i in $(seq "$rounds"); do
  start=$(date +%s.%N)
  id=$(curl -sf -H 'Authorization: Bearer fanout-bench-key-0123456789' -H 'Content-Type: application/json' \
    --data-binary "@$work/request.json" "http://127.0.0.1:$port/v1/notifications" | jq -r .id)
  while :; do
    status=$(curl -sf -H 'Authorization: Bearer fanout-bench-key-0123456789' "http://127.0.0.1:$port/v1/notifications/$id?limit=1" \
      | jq -r .status)
    case $status in done|failed|cancelled) break ;; esac
    sleep 0.02
  done
  end=$(date +%s.%N)
  seconds=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b-a}')
  results=$(curl -sf -H 'Authorization: Bearer fanout-bench-key-0123456789' "http://127.0.0.1:$port/v1/notifications/$id?limit=1" \
    | jq -c .counts)
  echo "fanout#$i tokens=$tokens status=$status seconds=$seconds counts=$results" >&2
  fanout+=("$seconds")
  line=$("$herald" bench --url "$apns_url" --count "$tokens" --connections 1 --concurrency 1000 2>/dev/null | tail -n 1)
  echo "bench#$i $line" >&2
  bench+=("$(sed -E 's/.* seconds=([0-9.]+).*/\1/' <<<"$line")")
done
f=$(printf '%s\n' "${fanout[@]}" | median)
b=$(printf '%s\n' "${bench[@]}" | median)
echo "fanout: tokens=$tokens fanout_seconds_median=$f bench_seconds_median=$b ratio=$(awk -v a="$f" -v b="$b" 'BEGIN {printf "%.2f", a/b}') (fan-out time / herald bench time; 1.0 = as fast as raw sending)"
