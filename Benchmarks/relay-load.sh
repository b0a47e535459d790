#!/usr/bin/env bash
# The Mastodon relay under load (issue 5): `herald relay` with APNs pointed at the APNs-shaped sink
# (../shared/bench/apns-sink), loaded by wrk on loopback, next to h2load's rate against the same
# sink in the same run. Then the fault drill: stop the sink mid-load, time until new requests get
# 503, check none gets 202 while it is down, start it again, time until 202.
# The full-speed stage alternates h2load and wrk ROUNDS times (default 3) and reports medians, and
# the relay's CPU time per request, steadier than rates when other work shares the machine.
# Every load is bounded by -d; only 127.0.0.1 is used.
# Usage: Benchmarks/relay-load.sh   (after `make release`, or HERALD_BIN=path/to/herald; needs wrk, h2load, h2o: scripts/bootstrap.sh --bench)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-10s}
rounds=${ROUNDS:-3}
relay_port=${RELAY_PORT:-3950}
sink_port=${SINK_PORT:-8453}
sink=${APNS_SINK:-../shared/bench/apns-sink}
work=$(mktemp -d /tmp/herald-relay-bench.XXXXXX)
cleanup() {
  [ -n "${relay_pid:-}" ] && kill -TERM "$relay_pid" 2>/dev/null && wait "$relay_pid" 2>/dev/null
  [ -n "${sink_pid:-}" ] && kill "$sink_pid" 2>/dev/null && wait "$sink_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

start_sink() {
  APNS_SINK_DIR="$work/sink" "$sink" "$sink_port" >>"$work/sink.log" 2>&1 &
  sink_pid=$!
  for _ in $(seq 100); do
    [ -f "$work/sink/cert.pem" ] && curl -s --http2 --cacert "$work/sink/cert.pem" -o /dev/null "https://127.0.0.1:$sink_port/" && return 0
    sleep 0.1
  done
  echo "relay-load: the sink did not start" >&2; exit 1
}
start_sink

openssl ecparam -name prime256v1 -genkey -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/key.p8"
APNS_AUTH_KEY="$(cat "$work/key.p8")" APNS_KEY_ID=BENCHKEY01 APPLE_TEAM_ID=BENCHTEAM1 TOPIC=com.example.bench \
  APNS_PRODUCTION_URL="https://127.0.0.1:$sink_port" APNS_SANDBOX_URL="https://127.0.0.1:$sink_port" \
  APNS_CA_FILE="$work/sink/cert.pem" PORT=$relay_port HOST=127.0.0.1 LOG_LEVEL=error \
  DATABASE_URL="sqlite:$work/relay.sqlite" "${HERALD_BIN:-.build/release/herald}" relay >"$work/relay.log" 2>&1 &
relay_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$relay_port/" >/dev/null 2>&1 && break; sleep 0.1; done

token=$(printf 'ab%.0s' $(seq 32))
body=$(head -c 300 /dev/urandom | base64 -w0 | head -c 300)
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.path = "/push/$token/0FE8C1A6-4B7E-4F7A-9E2A-0D3C1B6A9F10"
wrk.headers["Content-Encoding"] = "aes128gcm"
wrk.headers["TTL"] = "3600"
wrk.headers["Urgency"] = "normal"
wrk.body = "$body"
local statuses = {}
function response(status, headers, body) statuses[status] = (statuses[status] or 0) + 1 end
function done(summary, latency, requests)
  io.write(string.format("wrk: non2xx_or_3xx=%d socket_errors=%d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA
# The same script at a fixed rate: 53 connections, one request every 10 ms plus the answer time
# each, which lands at about 5,000 req/s on loopback.
sed 's/^local statuses/function delay() return 10 end\nlocal statuses/' "$work/post.lua" >"$work/post-5k.lua"

rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$relay_pid/status"; }
# CPU time (user + system, clock ticks) the relay used: per request it is steadier than the rate
# when other work shares the machine.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$relay_pid/stat"; }
per_request_us() { # ticks requests
  awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0)}'
}
hwm() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$relay_pid/status"; }
h2load_rate() {
  printf '{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":"aes128gcm","i":"x","m":"%s"}' "$body" >"$work/apns.json"
  h2load -n 100000 -c 1 -m 1000 -d "$work/apns.json" -H 'apns-topic: com.example.bench' -H 'apns-push-type: alert' \
    -H 'authorization: bearer x.y.z' "https://127.0.0.1:$sink_port/3/device/$token" | grep -E 'finished in' \
    | sed -E 's/.* ([0-9.]+) req\/s.*/\1/'
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "== relay at full speed (wrk -t2 -c64 -d$duration), h2load against the sink in the same run, alternating $rounds times"
references=(); rates=(); cpus=()
for i in $(seq "$rounds"); do
  references+=("$(h2load_rate)")
  before=$(cpu_ticks)
  max=$(wrk -t2 -c64 -d"$duration" --latency -s "$work/post.lua" "http://127.0.0.1:$relay_port")
  cpus+=("$(per_request_us $(($(cpu_ticks) - before)) "$(awk '/requests in/ {print $1}' <<<"$max")")")
  rates+=("$(awk '/Requests\/sec/ {print $2}' <<<"$max")")
  echo "round $i: h2load_sink_rate=${references[-1]} relay_rate=${rates[-1]} p50=$(awk '/ 50%/ {print $2}' <<<"$max") p99=$(awk '/ 99%/ {print $2}' <<<"$max") cpu_us_per_request=${cpus[-1]} $(grep -E '^wrk:' <<<"$max")"
done
reference=$(printf '%s\n' "${references[@]}" | median)
rate=$(printf '%s\n' "${rates[@]}" | median)
echo "relay-load: relay_rate=$rate h2load_sink_rate=$reference ratio=$(awk -v a="$rate" -v b="$reference" 'BEGIN {printf "%.2f", a/b}') cpu_us_per_request=$(printf '%s\n' "${cpus[@]}" | median) rss_mb=$(rss) peak_rss_mb=$(hwm) (medians)"

echo "== relay at about 5,000 req/s (wrk -t2 -c53, 10 ms between requests per connection)"
fixed=$(wrk -t2 -c53 -d"$duration" --latency -s "$work/post-5k.lua" "http://127.0.0.1:$relay_port")
echo "$fixed" | grep -E 'Requests/sec|50%|99%|wrk:'
echo "relay-load: fixed_rate=$(awk '/Requests\/sec/ {print $2}' <<<"$fixed") p50=$(awk '/ 50%/ {print $2}' <<<"$fixed") p99=$(awk '/ 99%/ {print $2}' <<<"$fixed") rss_mb=$(rss) peak_rss_mb=$(hwm)"

echo "== fault: stop the sink mid-load, then start it again"
wrk -t1 -c16 -d8s -s "$work/post.lua" "http://127.0.0.1:$relay_port" >"$work/fault-wrk.log" 2>&1 &
wrk_pid=$!
sleep 2
post() { curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Encoding: aes128gcm' --data-binary x \
  "http://127.0.0.1:$relay_port/push/$token/fault"; }
kill "$sink_pid"; wait "$sink_pid" 2>/dev/null || true; sink_pid=
stopped=$(date +%s.%N)
first503=""
while :; do
  code=$(post)
  now=$(date +%s.%N)
  [ "$code" = 503 ] && { first503=$(awk -v a="$now" -v b="$stopped" 'BEGIN {printf "%.3f", a-b}'); break; }
  awk -v a="$now" -v b="$stopped" 'BEGIN {exit !(a-b > 5)}' && break
  sleep 0.02
done
accepted_while_down=0; checked=0
for _ in $(seq 50); do
  code=$(post); checked=$((checked + 1))
  [ "$code" = 202 ] && accepted_while_down=$((accepted_while_down + 1))
  sleep 0.02
done
start_sink
started=$(date +%s.%N)
first202=""
for _ in $(seq 500); do
  if [ "$(post)" = 202 ]; then
    first202=$(awk -v a="$(date +%s.%N)" -v b="$started" 'BEGIN {printf "%.3f", a-b}'); break
  fi
  sleep 0.02
done
wait "$wrk_pid" || true
echo "relay-load: fault first_503_after_s=${first503:-never} accepted_while_down=$accepted_while_down/$checked first_202_after_restart_s=${first202:-never}"
