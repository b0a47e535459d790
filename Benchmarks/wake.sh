#!/usr/bin/env bash
# Wake pings (issue 23): DEVICES devices (default 100,000) registered through
# `POST /v1/devices/batch` (1,000 per request, CLIENTS requests at a time), then one APNs-mode wake
# schedule (`{"audience": {"all": true}}`, every 10 s) from `herald serve` to the APNs sink of
# ../shared/bench/ (apns-sink, h2o over TLS). Reports per backend: the wake run's send rate
# (devices / seconds from the first GET /v1/wake-schedules/{id} that shows the run to the first
# that shows it done, polled every 50 ms) next to `herald bench` sending as many pushes to the
# same sink in the same run, and `herald serve`'s peak RSS (VmHWM).
#   DEVICES=100000 BACKENDS="sqlite postgres" CLIENTS=4 SINK_PORT=8443 HERALD=.build/release/herald \
#     Benchmarks/wake.sh
# Target: send rate at least 0.5 x herald bench's.
set -euo pipefail
cd "$(dirname "$0")/.."
devices=${DEVICES:-100000}
backends=${BACKENDS:-sqlite postgres}
clients=${CLIENTS:-4}
port=${SINK_PORT:-8443}
sink=${APNS_SINK:-../shared/bench/apns-sink}
herald=${HERALD:-.build/release/herald}
[ -x "$herald" ] || swift build -c release --product herald >/dev/null
herald=$(realpath "$herald")
work=$(mktemp -d /tmp/herald-wake.XXXXXX)
key=wake-bench-key-0123456789
. Benchmarks/lib.sh

run_backend() {
  local backend=$1 url
  case $backend in
    sqlite) url="sqlite:$work/herald.sqlite"; rm -f "$work"/herald.sqlite* ;;
    postgres)
      start_throwaway_postgres
      # It sets its own EXIT trap: keep stopping herald and the sink too.
      trap 'cleanup; stop_throwaway_postgres 2>/dev/null || true' EXIT
      url=$THROWAWAY_PG_URL ;;
    *) echo "wake: unknown backend $backend" >&2; return 1 ;;
  esac
  local api_port
  api_port=$(free_port)
  PORT=$api_port HOST=127.0.0.1 DATABASE_URL=$url HERALD_API_KEYS=$key LOG_LEVEL=warning \
    "$herald" serve >"$work/serve-$backend.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$api_port/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$api_port/healthz" >/dev/null \
    || { echo "wake: herald serve did not start:" >&2; cat "$work/serve-$backend.log" >&2; return 1; }
  local base="http://127.0.0.1:$api_port"

  # Devices: batches of 1,000, CLIENTS at a time, every answer checked.
  python3 - "$base" "$key" "$devices" "$clients" <<'PY'
import http.client, json, os, sys, threading, urllib.parse
base, key, total, clients = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
host = urllib.parse.urlparse(base)
batches = list(range(0, total, 1000))
failures = []
def worker(index):
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=120)
    for start in batches[index::clients]:
        devices = [{"token": os.urandom(32).hex()} for i in range(min(1000, total - start))]
        connection.request("POST", "/v1/devices/batch", json.dumps({"devices": devices}),
                           {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            failures.append("%d %s" % (response.status, data[:200]))
threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
for t in threads: t.start()
for t in threads: t.join()
if failures:
    print("insert failures: %d, first: %s" % (len(failures), failures[0]), file=sys.stderr)
    sys.exit(1)
PY

  # One schedule; its first run is due 10 s after the POST. Time from its start to done.
  local created id result
  created=$(curl -sf -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    --data '{"name": "bench", "mode": "apns", "every": "10s", "audience": {"all": true}}' \
    "$base/v1/wake-schedules")
  id=$(jq -r .id <<<"$created")
  result=$(python3 - "$base" "$key" "$id" <<'PY'
import json, sys, time, urllib.request
base, key, id = sys.argv[1:4]
started = None
while True:
    request = urllib.request.Request(base + "/v1/wake-schedules/" + id, headers={"Authorization": "Bearer " + key})
    body = json.load(urllib.request.urlopen(request))
    now = time.time()
    runs = body.get("runs", [])
    if runs and started is None:
        started = now
    finished = [r for r in runs if r["status"] in ("done", "failed")]
    if finished:
        run = finished[-1]
        print("%.3f %s %d %d %d %d" % (now - started, run["status"], run["devices"], run["sent"], run["skipped"], run["failed"]))
        break
    time.sleep(0.05)
PY
)
  curl -sf -o /dev/null -X DELETE -H "Authorization: Bearer $key" "$base/v1/wake-schedules/$id"
  read -r send_seconds status run_devices sent skipped failed <<<"$result"
  local send_rate rss
  send_rate=$(awk -v n="$sent" -v s="$send_seconds" 'BEGIN {printf "%.0f", n/s}')
  rss=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$serve_pid/status")
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=

  # Reference: herald bench, same sink, same count, right after.
  local line bench_rate
  line=$("$herald" bench --url "https://127.0.0.1:$port" --count "$devices" --connections 1 --concurrency 1000 \
    2>/dev/null | tail -n 1)
  bench_rate=$(sed -E 's/.* rate=([0-9.]+)\/s.*/\1/' <<<"$line")
  echo "wake[$backend]: devices=$devices status=$status run_devices=$run_devices sent=$sent skipped=$skipped" \
    "failed=$failed send_seconds=$send_seconds send_rate=$send_rate/s bench_rate=$bench_rate/s" \
    "ratio=$(awk -v a="$send_rate" -v b="$bench_rate" 'BEGIN {printf "%.2f", a/b}')" \
    "serve_peak_rss_mb=$rss load=$(cut -d' ' -f1 /proc/loadavg)"
  if [ "$backend" = postgres ]; then stop_throwaway_postgres; fi
}

for backend in $backends; do run_backend "$backend"; done
