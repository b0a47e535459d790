#!/usr/bin/env bash
# APNs client throughput: `herald bench` next to h2load against the same APNs-shaped sink
# (../shared/bench/apns-sink, h2o over TLS), alternating ROUNDS times each, medians and ratio.
# Loopback only; every run is bounded by its request count.
# Usage: Benchmarks/apns-client.sh [CONNECTIONS] [STREAMS]     (defaults 1 and 1000)
#   COUNT=200000 ROUNDS=3 SINK_PORT=8443 (environment)
set -euo pipefail
cd "$(dirname "$0")/.."
connections=${1:-1}
streams=${2:-1000}
count=${COUNT:-200000}
rounds=${ROUNDS:-3}
port=${SINK_PORT:-8443}
sink=${APNS_SINK:-../shared/bench/apns-sink}
work=$(mktemp -d /tmp/herald-apns-bench.XXXXXX)
cleanup() {
  [ -n "${sink_pid:-}" ] && kill "$sink_pid" 2>/dev/null && wait "$sink_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

APNS_SINK_DIR="$work/sink" "$sink" "$port" >"$work/sink.log" 2>&1 &
sink_pid=$!
for _ in $(seq 100); do
  [ -f "$work/sink/cert.pem" ] && curl -s --http2 --cacert "$work/sink/cert.pem" -o /dev/null "https://127.0.0.1:$port/" && break
  sleep 0.1
done
export APNS_CA_FILE="$work/sink/cert.pem"
token=$(printf 'ab%.0s' $(seq 32))
printf '{"aps":{"alert":{"title":"Herald","body":"Benchmark push"},"sound":"default"}}' >"$work/body.json"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
h2load_rates=(); herald_rates=(); lines=()
for i in $(seq "$rounds"); do
  out=$(h2load -n "$count" -c "$connections" -m "$streams" -d "$work/body.json" \
    -H 'apns-topic: com.example.bench' -H 'apns-push-type: alert' -H 'authorization: bearer x.y.z' \
    "https://127.0.0.1:$port/3/device/$token")
  rate=$(grep -E 'finished in' <<<"$out" | sed -E 's/.* ([0-9.]+) req\/s.*/\1/')
  h2load_rates+=("$rate")
  echo "h2load#$i req/s=$rate $(grep -E '^requests:' <<<"$out")" >&2
  line=$(.build/release/herald bench --url "https://127.0.0.1:$port" --count "$count" \
    --connections "$connections" --concurrency "$((connections * streams))" 2>/dev/null | tail -n 1)
  echo "herald#$i $line" >&2
  lines+=("$line")
  herald_rates+=("$(sed -E 's/.* rate=([0-9.]+)\/s.*/\1/' <<<"$line")")
done
h2=$(printf '%s\n' "${h2load_rates[@]}" | median)
he=$(printf '%s\n' "${herald_rates[@]}" | median)
echo "apns-client: connections=$connections streams=$streams h2load_median=$h2 herald_median=$he ratio=$(awk -v a="$he" -v b="$h2" 'BEGIN {printf "%.2f", a/b}')"
