#!/usr/bin/env bash
# Audiences (issue 21): DEVICES devices (default 1,000,000) registered through
# `POST /v1/devices/batch` (1,000 per request, CLIENTS requests at a time), then one
# `{"audience": {"all": true}}` notification from `herald serve` to the APNs sink of
# ../shared/bench/ (apns-sink, h2o over TLS). Reports per backend: the insert rate, the send rate
# (devices / seconds from the POST to the notification's `done`) next to `herald bench` sending as
# many pushes to the same sink in the same run, and `herald serve`'s peak RSS (VmHWM). The insert
# rate has its own reference from the same run: the database's own rate (db_insert_rate) for the
# same rows (a `devices` row and its `device_tags` row per device, random tokens) in a fresh
# database with Herald's schema, written by the sqlite3 shell or psql 1,000 devices to a
# transaction, and insert_ratio = insert_rate / db_insert_rate.
#   DEVICES=1000000 BACKENDS="sqlite postgres" CLIENTS=4 SINK_PORT=8443 HERALD=.build/release/herald \
#     Benchmarks/audience.sh
# Targets: send rate at least 0.5 x herald bench's, insert_ratio at least 0.3, peak RSS under 100 MB.
# Needs python3, jq, curl, and sqlite3 or psql/pg_dump (scripts/bootstrap.sh --bench).
set -euo pipefail
cd "$(dirname "$0")/.."
devices=${DEVICES:-1000000}
backends=${BACKENDS:-sqlite postgres}
clients=${CLIENTS:-4}
port=${SINK_PORT:-8443}
sink=${APNS_SINK:-../shared/bench/apns-sink}
herald=${HERALD:-.build/release/herald}
[ -x "$herald" ] || swift build -c release --product herald >/dev/null
herald=$(realpath "$herald")
work=$(mktemp -d /tmp/herald-audience.XXXXXX)
key=audience-bench-key-0123456789
. Benchmarks/lib.sh

# Prints the devices per second the database's own shell inserts: DEVICES rows of `devices` and
# of `device_tags` (one tag each, as the import sends), 1,000 devices to a transaction of two
# multi-row INSERTs, into a fresh database with the schema Herald made at `url` (its indexes
# included). SQLite runs with Herald's settings (WAL, synchronous=NORMAL).
db_insert_reference() {
  local backend=$1 url=$2 started ended
  python3 - "$devices" "$backend" >"$work/reference.sql" <<'PY'
import os, sys
total, backend = int(sys.argv[1]), sys.argv[2]
out = sys.stdout
if backend == "sqlite":
    out.write("PRAGMA journal_mode=WAL;\nPRAGMA synchronous=NORMAL;\n")
for start in range(0, total, 1000):
    count = min(1000, total - start)
    tokens = [os.urandom(32).hex() for _ in range(count)]
    out.write("BEGIN;\nINSERT INTO devices (app, environment, token, user_id, tags, status, created_at, "
              "updated_at, last_registered_at) VALUES ")
    out.write(",".join("('com.example.bench','production','%s','user%d','[\"bench\"]','active',%d,%d,%d)"
                       % (t, (start + i) % 100000, 1800000000000 + start + i, 1800000000000 + start + i,
                          1800000000000 + start + i) for i, t in enumerate(tokens)))
    out.write(";\nINSERT INTO device_tags (app, environment, tag, active, token) VALUES ")
    out.write(",".join("('com.example.bench','production','bench',1,'%s')" % t for t in tokens))
    out.write(";\nCOMMIT;\n")
PY
  case $backend in
    sqlite)
      { sqlite3 "$work/herald.sqlite" '.schema devices'; sqlite3 "$work/herald.sqlite" '.schema device_tags'; } \
        | sqlite3 "$work/reference.sqlite"
      started=$(date +%s.%N)
      sqlite3 -bail "$work/reference.sqlite" <"$work/reference.sql" >/dev/null
      ended=$(date +%s.%N)
      rm -f "$work"/reference.sqlite* ;;
    postgres)
      local reference_url=${url%/*}/herald_reference
      psql -q "$url" -c 'CREATE DATABASE herald_reference' >/dev/null
      "$THROWAWAY_PG_BIN/pg_dump" --schema-only -t devices -t device_tags "$url" | psql -q "$reference_url" >/dev/null
      started=$(date +%s.%N)
      psql -q -v ON_ERROR_STOP=1 "$reference_url" -f "$work/reference.sql" >/dev/null
      ended=$(date +%s.%N)
      psql -q "$url" -c 'DROP DATABASE herald_reference' >/dev/null ;;
  esac
  rm -f "$work/reference.sql"
  awk -v n="$devices" -v a="$started" -v b="$ended" 'BEGIN {printf "%.0f", n/(b-a)}'
}

run_backend() {
  local backend=$1 url
  case $backend in
    sqlite) url="sqlite:$work/herald.sqlite"; rm -f "$work"/herald.sqlite* ;;
    postgres)
      start_throwaway_postgres
      # It sets its own EXIT trap: keep stopping herald and the sink too.
      trap 'cleanup; stop_throwaway_postgres 2>/dev/null || true' EXIT
      url=$THROWAWAY_PG_URL ;;
    *) echo "audience: unknown backend $backend" >&2; return 1 ;;
  esac
  local api_port
  api_port=$(free_port)
  PORT=$api_port HOST=127.0.0.1 DATABASE_URL=$url HERALD_API_KEYS=$key LOG_LEVEL=warning \
    "$herald" serve >"$work/serve-$backend.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$api_port/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$api_port/healthz" >/dev/null \
    || { echo "audience: herald serve did not start:" >&2; cat "$work/serve-$backend.log" >&2; return 1; }
  local base="http://127.0.0.1:$api_port"

  # Insert: batches of 1,000 devices, CLIENTS at a time, every answer checked.
  local inserted
  inserted=$(python3 - "$base" "$key" "$devices" "$clients" <<'PY'
import http.client, json, os, sys, threading, time, urllib.parse
base, key, total, clients = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
host = urllib.parse.urlparse(base)
batches = list(range(0, total, 1000))
lock = threading.Lock()
failures = []
def worker(index):
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=120)
    for start in batches[index::clients]:
        devices = [{"token": os.urandom(32).hex(), "user_id": "user%d" % ((start + i) % 100000),
                    "tags": ["bench"]} for i in range(min(1000, total - start))]
        body = json.dumps({"devices": devices})
        connection.request("POST", "/v1/devices/batch", body,
                           {"Authorization": "Bearer " + key, "Content-Type": "application/json"})
        response = connection.getresponse()
        data = response.read()
        if response.status != 200:
            with lock: failures.append("%d %s" % (response.status, data[:200]))
began = time.time()
threads = [threading.Thread(target=worker, args=(i,)) for i in range(clients)]
for t in threads: t.start()
for t in threads: t.join()
elapsed = time.time() - began
if failures:
    print("insert failures: %d, first: %s" % (len(failures), failures[0]), file=sys.stderr)
    sys.exit(1)
print("%.3f %.0f" % (elapsed, total / elapsed))
PY
)
  local insert_seconds=${inserted% *} insert_rate=${inserted#* }
  # The page query has an index of its own (devices_active, migration 21): its plan does not
  # depend on statistics, so the send starts at once. Whether autovacuum had analyzed the registry
  # by then is reported.
  local analyzed=n/a
  if [ "$backend" = postgres ]; then
    analyzed=$(psql -At "$url" -c "SELECT CASE WHEN last_autoanalyze IS NULL AND last_analyze IS NULL
      THEN 'no' ELSE 'yes' END FROM pg_stat_user_tables WHERE relname = 'devices'")
  fi

  # Send: one `all` notification; time from the POST to done.
  local start end id status body
  start=$(date +%s.%N)
  id=$(curl -sf -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    --data '{"audience": {"all": true}, "payload": {"aps": {"alert": {"title": "Herald", "body": "Everyone"}}}}' \
    "$base/v1/notifications" | jq -r .id)
  # Polled through the list, the only notification of the run, whose summaries carry no counts:
  # counting a large send's results while it runs would load the database it measures.
  while :; do
    status=$(curl -sf -H "Authorization: Bearer $key" "$base/v1/notifications?limit=1" | jq -r '.notifications[0].status')
    case $status in done|failed|cancelled) break ;; esac
    sleep 0.2
  done
  end=$(date +%s.%N)
  body=$(curl -sf -H "Authorization: Bearer $key" "$base/v1/notifications/$id?limit=1")
  local send_seconds send_rate rss progress
  send_seconds=$(awk -v a="$start" -v b="$end" 'BEGIN {printf "%.3f", b-a}')
  progress=$(jq -c .progress <<<"$body")
  send_rate=$(awk -v n="$devices" -v s="$send_seconds" 'BEGIN {printf "%.0f", n/s}')
  rss=$(awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$serve_pid/status")
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=

  # Reference for the insert rate: the same rows written by the database's own shell.
  local db_insert_rate
  db_insert_rate=$(db_insert_reference "$backend" "$url")

  # Reference: herald bench, same sink, same count, right after.
  local line bench_rate
  line=$("$herald" bench --url "https://127.0.0.1:$port" --count "$devices" --connections 1 --concurrency 1000 \
    2>/dev/null | tail -n 1)
  bench_rate=$(sed -E 's/.* rate=([0-9.]+)\/s.*/\1/' <<<"$line")
  echo "audience[$backend]: devices=$devices insert_seconds=$insert_seconds insert_rate=$insert_rate/s" \
    "db_insert_rate=$db_insert_rate/s insert_ratio=$(awk -v a="$insert_rate" -v b="$db_insert_rate" 'BEGIN {printf "%.2f", a/b}')" \
    "analyzed_before_send=$analyzed status=$status progress=$progress send_seconds=$send_seconds send_rate=$send_rate/s" \
    "bench_rate=$bench_rate/s ratio=$(awk -v a="$send_rate" -v b="$bench_rate" 'BEGIN {printf "%.2f", a/b}')" \
    "serve_peak_rss_mb=$rss load=$(cut -d' ' -f1 /proc/loadavg)"
  if [ "$backend" = postgres ]; then stop_throwaway_postgres; fi
}

for backend in $backends; do run_backend "$backend"; done
