#!/usr/bin/env bash
# APNs client throughput: `herald bench` next to h2load against the same APNs-shaped sink
# (../shared/bench/apns-sink, h2o over TLS), alternating ROUNDS times each, medians and ratio.
# Loopback only; every run is bounded by its request count.
# Usage: Benchmarks/apns-client.sh [CONNECTIONS] [STREAMS]     (defaults 1 and 1000)
#   COUNT=200000 ROUNDS=3 SINK_PORT=8443 HERALD=.build/release/herald (environment)
#   EXECUTOR=pool|loop: where herald bench runs its sending tasks (its --executor; default pool)
# Both sides send the same header fields with values of the same length: h2load gets an
# ES256-JWT-shaped `authorization` as long as the one herald signs (key and team id BENCH00001),
# and the same `apns-id`, `apns-push-type`, `apns-priority` and `apns-topic`. (h2load's constant
# `apns-id` may enter the HPACK table, herald's per-push one never does: herald sends ~40 bytes more.)
set -euo pipefail
cd "$(dirname "$0")/.."
connections=${1:-1}
streams=${2:-1000}
count=${COUNT:-200000}
rounds=${ROUNDS:-3}
port=${SINK_PORT:-8443}
sink=${APNS_SINK:-../shared/bench/apns-sink}
herald=${HERALD:-.build/release/herald}
executor=${EXECUTOR:-pool}
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
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
jwt="$(printf '{"alg":"ES256","kid":"BENCH00001"}' | b64url).$(printf '{"iss":"BENCH00001","iat":%s}' "$(date +%s)" | b64url).$(head -c 64 /dev/urandom | b64url)"

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# CPU time (user + system) per request in microseconds, for each side: unlike the rates, it hardly
# moves when other work shares the machine.
cpu_us() { awk -v n="$count" '/^cpu / {printf "%.2f", ($2 + $3) * 1e6 / n}' "$work/time"; }
h2load_rates=(); herald_rates=(); lines=(); h2load_cpu=(); herald_cpu=()
for i in $(seq "$rounds"); do
  out=$(/usr/bin/time -f 'cpu %U %S' -o "$work/time" h2load -n "$count" -c "$connections" -m "$streams" -d "$work/body.json" \
    -H "authorization: bearer $jwt" -H 'apns-id: 0f6a3c1e-3b7d-4c8e-9a51-2d4e6f708192' \
    -H 'apns-push-type: alert' -H 'apns-priority: 10' -H 'apns-topic: com.example.bench' \
    "https://127.0.0.1:$port/3/device/$token")
  rate=$(grep -E 'finished in' <<<"$out" | sed -E 's/.* ([0-9.]+) req\/s.*/\1/')
  h2load_rates+=("$rate")
  h2load_cpu+=("$(cpu_us)")
  echo "h2load#$i req/s=$rate cpu_us_per_request=$(cpu_us) $(grep -E '^requests:' <<<"$out")" >&2
  line=$(/usr/bin/time -f 'cpu %U %S' -o "$work/time" "$herald" bench --url "https://127.0.0.1:$port" --count "$count" \
    --connections "$connections" --concurrency "$((connections * streams))" --executor "$executor" 2>/dev/null | tail -n 1)
  herald_cpu+=("$(cpu_us)")
  echo "herald#$i $line cpu_us_per_request=$(cpu_us) load=$(cut -d' ' -f1 /proc/loadavg)" >&2
  lines+=("$line")
  herald_rates+=("$(sed -E 's/.* rate=([0-9.]+)\/s.*/\1/' <<<"$line")")
done
h2=$(printf '%s\n' "${h2load_rates[@]}" | median)
he=$(printf '%s\n' "${herald_rates[@]}" | median)
rss=$(printf '%s\n' "${lines[@]}" | sed -E 's/.* rss_mb=([0-9.]+).*/\1/' | median)
failed=$(printf '%s\n' "${lines[@]}" | sed -E 's/.* failed=([0-9]+).*/\1/' | awk '{s+=$1} END {print s}')
h2cpu=$(printf '%s\n' "${h2load_cpu[@]}" | median)
hecpu=$(printf '%s\n' "${herald_cpu[@]}" | median)
echo "apns-client: connections=$connections streams=$streams executor=$executor h2load_median=$h2 herald_median=$he ratio=$(awk -v a="$he" -v b="$h2" 'BEGIN {printf "%.2f", a/b}') herald_failed=$failed herald_rss_mb_median=$rss cpu_us_per_request: h2load=$h2cpu herald=$hecpu"
