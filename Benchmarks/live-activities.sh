#!/usr/bin/env bash
# Live Activities (issue 22): ACTIVITIES activities (default 10,000) started by push-to-start from
# `herald serve` against the APNs sink of ../shared/bench/ (apns-sink, h2o over TLS), each
# reported by its "app" (half with an update token, half with only a device token), then one
# `POST /v1/live-activities/{id}/update` each, sent by wrk (one thread, CONNECTIONS connections,
# default 64, each id once; a connection with no id left waits until wrk is stopped). Reports per
# backend the time from the first update to APNs having answered all
# (herald_live_activity_deliveries_total for update_token and silent), the rate, and next to it
# `herald bench` sending as many pushes to the same sink in the same run. Also per update, during
# the updates: herald_cpu_us (CPU of herald serve), load_cpu_us (wrk and the sink), and
# bench_cpu_us (CPU of herald bench per push: the APNs side alone), budget_us, what the target
# leaves for all of it on this machine's cores (nproc / (0.5 x herald bench's rate)). The C floor of
# the same run: mhd_floor_us (libmicrohttpd answering the same requests, doing nothing: mhd_floor
# below), sqlite_floor_us or pg_floor_us (the database's own cost of the writes: db_floor below),
# floor_us = mhd_floor_us + bench_cpu_us + sqlite_floor_us|pg_floor_us, and
# floor_ratio_cpu = herald_cpu_us / floor_us.
#   ACTIVITIES=10000 BACKENDS="sqlite postgres" CONNECTIONS=64 SINK_PORT=8443 HERALD=.build/release/herald \
#     Benchmarks/live-activities.sh
# Targets: a rate of at least 0.5 x herald bench's; floor_ratio_cpu at most 1.5 on SQLite and 2 on
# PostgreSQL (median of three runs).
set -euo pipefail
cd "$(dirname "$0")/.."
activities=${ACTIVITIES:-10000}
backends=${BACKENDS:-sqlite postgres}
clients=${CLIENTS:-8}
connections=${CONNECTIONS:-64}
port=${SINK_PORT:-8443}
sink=${APNS_SINK:-../shared/bench/apns-sink}
herald=${HERALD:-.build/release/herald}
[ -x "$herald" ] || swift build -c release --product herald >/dev/null
herald=$(realpath "$herald")
work=$(mktemp -d /tmp/herald-live-activities.XXXXXX)
key=live-activities-bench-key-0123456789
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
. Benchmarks/lib.sh

cat >"$work/updates.lua" <<LUA
local ids = {}
for line in io.lines("$work/ids.txt") do ids[#ids + 1] = line end
local sent = 0
local checked = false
failed = 0
wrk.headers["Authorization"] = "Bearer $key"
wrk.headers["Content-Type"] = "application/json"
function request()
  -- wrk calls request() once before the run to check what it returns: give it no id.
  if not checked then
    checked = true
    return wrk.format("GET", "/healthz")
  end
  if sent < #ids then
    sent = sent + 1
    return wrk.format("POST", "/v1/live-activities/" .. ids[sent] .. "/update", nil, '{"content_state": {"step": 1}}')
  end
  return wrk.format("GET", "/healthz")
end
-- Once every id is sent, a connection waits (an hour) instead of asking again; wrk is stopped.
function delay()
  if sent >= #ids then return 3600000 end
  return 0
end
-- ANSWERED_FILE, when set (the libmicrohttpd floor), is created once as many answers as ids came back.
local answered = 0
local answered_file = os.getenv("ANSWERED_FILE")
function response(status, headers, body)
  if status ~= 202 and status ~= 200 then failed = failed + 1 end
  answered = answered + 1
  if answered_file and answered == #ids then io.open(answered_file, "w"):close() end
end
local threads = {}
function setup(thread) threads[#threads + 1] = thread end
function done(summary, latency, requests)
  io.write(string.format("updates: failed=%d socket_errors=%d\n", threads[1]:get("failed"),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA

# The floor the database alone puts under any implementation (sqlite_floor_us, pg_floor_us): on a
# copy of the run's database, the database's own shell replays only the writes an accepted and
# delivered update cannot do without, as Herald's statements write them: its activity's new latest
# state and timestamp, its share of a send job (one job per 256 updates) and its delivery row, 256
# updates a transaction. No reads, no instances, no HTTP, no APNs. SQLite: the sqlite3 shell, with
# Herald's pragmas, a 64 MiB page cache and no checkpoint, its CPU (user + system) per update.
# PostgreSQL: psql on a database copied from the run's (CREATE DATABASE ... TEMPLATE), the CPU of
# the postgres backend serving it per update (read from /proc, so the server must be local).
# Prints microseconds per update; prints nothing when the shell is not installed.
db_floor() { # backend database-file-or-url
  local backend=$1 target=$2
  case $backend in
    sqlite) command -v sqlite3 >/dev/null || return 0; cp "$target" "$work/floor.sqlite"; target=$work/floor.sqlite ;;
    postgres)
      command -v psql >/dev/null || return 0
      psql -q -v ON_ERROR_STOP=1 "${target%/*}/template1" -c "SET client_min_messages = warning" \
        -c "DROP DATABASE IF EXISTS herald_floor" \
        -c "CREATE DATABASE herald_floor TEMPLATE ${target##*/}" >/dev/null
      target=${target%/*}/herald_floor ;;
  esac
  python3 - "$backend" "$target" "$work/ids.txt" <<'PY'
import json, random, resource, subprocess, sys, time, uuid
backend, target, ids_file = sys.argv[1], sys.argv[2], sys.argv[3]
ids = [line.strip() for line in open(ids_file) if line.strip()]
random.shuffle(ids)
stamp = int(time.time()) + 60
quote = lambda text: "'" + text.replace("'", "''") + "'"
if backend == "sqlite":
    lines = [".output /dev/null", "PRAGMA journal_mode=WAL;", "PRAGMA synchronous=NORMAL;", "PRAGMA temp_store=MEMORY;",
             "PRAGMA cache_size=-65536;", "PRAGMA wal_autocheckpoint=0;"]
    begin = "BEGIN IMMEDIATE;"
else:
    lines, begin = [], "BEGIN;"
for start in range(0, len(ids), 256):
    batch = ids[start:start + 256]
    update = {"contentState": {"step": 1}, "event": "update", "priority": 10, "timestamp": stamp}
    sends = json.dumps({"sends": [{"id": i, "update": update} for i in batch]}, separators=(",", ":"))
    rows = ", ".join("(%s, %d, %s, '{\"step\":1}')" % (quote(i), stamp, quote(json.dumps(update))) for i in batch)
    lines += [begin,
              "WITH v (id, last_timestamp, last_update, content_state) AS (VALUES %s) UPDATE live_activities SET "
              "last_timestamp = v.last_timestamp, last_update = v.last_update, content_state = v.content_state, "
              "updated_at = %d FROM v WHERE live_activities.id = v.id;" % (rows, stamp * 1000),
              "INSERT INTO jobs (id, kind, payload, status, due_at, attempts, max_attempts, unique_key, schedule, "
              "missed_runs, created_at, updated_at) VALUES (%s, 'live_activity.send', %s, 'pending', %d, 0, 20, "
              "NULL, NULL, 'run_once', %d, %d);" % (quote(str(uuid.uuid4())), quote(sends), stamp * 1000, stamp * 1000,
                                                stamp * 1000),
              "INSERT INTO live_activity_deliveries (live_activity_id, at, id, event, route, token, status, reason, "
              "apns_id) VALUES %s;" % ", ".join(
                  "(%s, %d, '%016x-%s', 'update', 'silent', 'abcdef12', 200, NULL, %s)"
                  % (quote(i), stamp * 1000, n, uuid.uuid4().hex[:17], quote(str(uuid.uuid4())))
                  for n, i in enumerate(batch)),
              "COMMIT;"]
script = "\n".join(lines) + "\n"
if backend == "sqlite":
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(["sqlite3", target], input=script.encode(), check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
else:
    # One psql session: its backend's pid first, then the writes, then a marker once they are done.
    psql = subprocess.Popen(["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", target], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    ask = lambda sql: (psql.stdin.write(sql), psql.stdin.flush())
    ask("SELECT pg_backend_pid();\n")
    pid = int(psql.stdout.readline())
    ticks = lambda: sum(int(f) for f in open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[11:13])
    before = ticks()
    ask(script + "SELECT 'floor-done';\n")
    while psql.stdout.readline().strip() != "floor-done": pass
    cpu = (ticks() - before) / float(subprocess.check_output(["getconf", "CLK_TCK"]))
    psql.stdin.close(); psql.wait()
print("%.1f" % (cpu / len(ids) * 1e6))
PY
}

# The floor of the HTTP side (mhd_floor_us): libmicrohttpd in C, set up as Herald's server, answering
# 202 and doing nothing else (Benchmarks/mhd-floor.c, as Benchmarks/relay-load.sh uses it), sent the
# same updates by the same wrk script; its CPU per update. Prints nothing without gcc/libmicrohttpd.
mhd_floor() {
  [ -x "$work/mhd-floor" ] || gcc -O2 -o "$work/mhd-floor" Benchmarks/mhd-floor.c -lmicrohttpd 2>"$work/gcc.log" \
    || return 0
  local floor_port floor_pid wrk_pid before
  floor_port=$(free_port)
  "$work/mhd-floor" "$floor_port" &
  floor_pid=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$floor_port/" && break; sleep 0.1; done
  rm -f "$work/floor.answered"
  before=$(cpu_ticks "$floor_pid")
  ANSWERED_FILE="$work/floor.answered" wrk -t1 -c"$connections" -d600s -s "$work/updates.lua" \
    "http://127.0.0.1:$floor_port" >/dev/null 2>&1 &
  wrk_pid=$!
  for _ in $(seq 6000); do [ -f "$work/floor.answered" ] && break; sleep 0.1; done
  awk -v t="$(($(cpu_ticks "$floor_pid") - before))" -v n="$activities" -v hz="$(getconf CLK_TCK)" \
    'BEGIN {printf "%.1f", t / hz / n * 1e6}'
  kill -INT "$wrk_pid"; wait "$wrk_pid" 2>/dev/null || true
  kill "$floor_pid"; wait "$floor_pid" 2>/dev/null || true
}

# CPU time (user + system, in clock ticks) the processes have used so far.
cpu_ticks() {
  local pid total=0
  for pid in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat"))); done
  echo "$total"
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
    *) echo "live-activities: unknown backend $backend" >&2; return 1 ;;
  esac
  local api_port
  api_port=$(free_port)
  # Every simulated app reports from 127.0.0.1: the per-address limit of /v1/client is off here.
  PORT=$api_port HOST=127.0.0.1 DATABASE_URL=$url HERALD_API_KEYS=$key HERALD_CLIENT_TOKEN_SECRET=$secret \
    HERALD_CLIENT_IP_RATE_LIMIT=off LOG_LEVEL=warning "$herald" serve >"$work/serve-$backend.log" 2>&1 &
  serve_pid=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$api_port/healthz" >/dev/null && break; sleep 0.1; done
  curl -sf "http://127.0.0.1:$api_port/healthz" >/dev/null \
    || { echo "live-activities: herald serve did not start:" >&2; cat "$work/serve-$backend.log" >&2; return 1; }

  # Setup, not timed: the activities started and reported, their ids in ids.txt.
  local result
  if ! IDS_FILE="$work/ids.txt" python3 - "http://127.0.0.1:$api_port" "$key" "$secret" "$activities" "$clients" <<'PY'
import base64, hashlib, hmac, http.client, json, os, re, sys, threading, time, urllib.parse
base, key, secret, total, clients = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
host = urllib.parse.urlparse(base)
local = threading.local()

def b64(data): return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

def client_token(user):
    now = int(time.time())
    header = b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    claims = b64(json.dumps({"sub": user, "aud": "herald", "iat": now, "exp": now + 3600}).encode())
    signature = hmac.new(secret.encode(), (header + "." + claims).encode(), hashlib.sha256).digest()
    return header + "." + claims + "." + b64(signature)

def call(method, path, body, token=key, expect=(200, 201, 202)):
    if not hasattr(local, "connection"):
        local.connection = http.client.HTTPConnection(host.hostname, host.port, timeout=120)
    local.connection.request(method, path, json.dumps(body) if body is not None else None,
                             {"Authorization": "Bearer " + token, "Content-Type": "application/json"})
    response = local.connection.getresponse()
    data = response.read()
    if response.status not in expect:
        raise SystemExit("%s %s: %d %s" % (method, path, response.status, data[:300]))
    return json.loads(data) if data else {}

def parallel(work):
    errors = []
    def run(index):
        try:
            for i in range(index, total, clients): work(i)
        except BaseException as error:
            errors.append(error)
    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads: t.start()
    for t in threads: t.join()
    if errors: raise SystemExit(str(errors[0]))

def delivered():
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    counts = {}
    for line in text.splitlines():
        if line.startswith("herald_live_activity_deliveries_total{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            counts[(labels.get("route"), labels.get("result"))] = float(line.rsplit(" ", 1)[1])
    return counts

ids = [None] * total
def start(i):
    call("PUT", "/v1/users/u%d/push-to-start-tokens" % i,
         {"attributes_type": "BenchAttributes", "token": os.urandom(32).hex()})
    ids[i] = call("POST", "/v1/live-activities", {
        "attributes_type": "BenchAttributes", "content_state": {"step": 0},
        "alert": {"title": "Bench", "body": "Started"}, "audience": {"users": ["u%d" % i]}})["id"]
parallel(start)
while delivered().get(("push_to_start", "delivered"), 0) < total: time.sleep(0.5)
def report(i):
    instance = {"activity_id": "ios-%d" % i, "device_token": os.urandom(32).hex()}
    if i % 2 == 0: instance["update_token"] = os.urandom(32).hex()
    call("POST", "/v1/client/live-activities/%s/instances" % ids[i], instance, token=client_token("u%d" % i))
parallel(report)

with open(os.environ["IDS_FILE"], "w") as out:
    out.write("\n".join(ids) + "\n")
PY
  then
    echo "live-activities: the setup failed; herald serve's log:" >&2; tail -40 "$work/serve-$backend.log" >&2
    return 1
  fi

  # The updates, timed until APNs answered every one; the CPU time herald serve, and wrk with
  # the sink, used meanwhile.
  local began herald_ticks load_ticks
  herald_ticks=$(cpu_ticks "$serve_pid")
  began=$(date +%s.%N)
  wrk -t1 -c"$connections" -d3600s -s "$work/updates.lua" "http://127.0.0.1:$api_port" >"$work/wrk.out" 2>&1 &
  local wrk_pid=$!
  load_ticks=$(cpu_ticks "$sink_pid")
  result=$(python3 - "http://127.0.0.1:$api_port" "$activities" "$began" <<'PY'
import http.client, re, sys, time, urllib.parse
host, total, began = urllib.parse.urlparse(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])

def metrics():
    connection = http.client.HTTPConnection(host.hostname, host.port, timeout=30)
    connection.request("GET", "/metrics")
    text = connection.getresponse().read().decode()
    counts, accepted = {}, 0
    for line in text.splitlines():
        if line.startswith("herald_live_activity_deliveries_total{"):
            labels = dict(re.findall(r'(\w+)="([^"]*)"', line))
            counts[(labels.get("route"), labels.get("result"))] = float(line.rsplit(" ", 1)[1])
        elif line.startswith("herald_live_activity_updates_total{"):
            accepted += float(line.rsplit(" ", 1)[1])
    return counts, accepted

accepted_at = None
while True:
    seen, accepted = metrics()
    if accepted_at is None and accepted >= total: accepted_at = time.time() - began
    answered = sum(v for (route, _), v in seen.items() if route in ("update_token", "silent"))
    if answered >= total: break
    if time.time() - began > 600:
        raise SystemExit("after 600 s: %d of %d updates accepted, APNs answered %d" % (accepted, total, answered))
    time.sleep(0.02)
elapsed = time.time() - began
via = lambda route: int(sum(v for (r, _), v in seen.items() if r == route))
print("%.3f %.3f %.0f %d %d %d" % (accepted_at, elapsed, total / elapsed, via("update_token"), via("silent"),
      int(seen.get(("update_token", "delivered"), 0) + seen.get(("silent", "delivered"), 0))))
PY
) || { echo "live-activities: the run failed: $(cat "$work/wrk.out")" >&2; kill "$wrk_pid"; return 1; }
  herald_ticks=$(($(cpu_ticks "$serve_pid") - herald_ticks))
  load_ticks=$(($(cpu_ticks "$sink_pid" "$wrk_pid") - load_ticks))
  kill -INT "$wrk_pid"; wait "$wrk_pid" || true
  grep -q '^updates: failed=0 socket_errors=0' "$work/wrk.out" \
    || { echo "live-activities: some updates failed: $(cat "$work/wrk.out")" >&2; return 1; }
  read -r accept_seconds seconds rate via_token via_silent delivered <<<"$result"
  kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=
  local db_floor_us mhd_floor_us
  db_floor_us=$(db_floor "$backend" "${url#sqlite:}")
  mhd_floor_us=$(mhd_floor)

  # Reference: herald bench, same sink, same count, right after.
  local line bench_rate
  # `times` adds the CPU the subshell's children used: herald bench's, what its pushes cost it.
  local bench_cpu
  line=$({ "$herald" bench --url "https://127.0.0.1:$port" --count "$activities" --connections 1 \
    --concurrency 1000 2>/dev/null | tail -n 1; times; } | tr '\n' ' ')
  bench_cpu=$(awk '{u = $(NF - 1); s = $NF; gsub(/s/, "", u); gsub(/s/, "", s); split(u, a, "m"); split(s, b, "m")
    print a[1] * 60 + a[2] + b[1] * 60 + b[2]}' <<<"$line")
  bench_rate=$(sed -E 's/.* rate=([0-9.]+)\/s.*/\1/' <<<"$line")
  local db_floor_name=sqlite_floor_us
  [ "$backend" = postgres ] && db_floor_name=pg_floor_us
  echo "live-activities[$backend]: activities=$activities update_token=$via_token silent=$via_silent" \
    "delivered=$delivered accept_seconds=$accept_seconds seconds=$seconds rate=$rate/s bench_rate=$bench_rate/s" \
    "ratio=$(awk -v a="$rate" -v b="$bench_rate" 'BEGIN {printf "%.2f", a/b}')" \
    "$(awk -v h="$herald_ticks" -v l="$load_ticks" -v n="$activities" -v t="$(getconf CLK_TCK)" -v d="${db_floor_us:-}" \
      -v m="${mhd_floor_us:-}" -v name="$db_floor_name" -v b="$bench_rate" -v c="$(nproc)" -v p="$bench_cpu" 'BEGIN {
        herald = h / t / n * 1e6; bench = p / n * 1e6
        printf "herald_cpu_us=%.0f load_cpu_us=%.0f bench_cpu_us=%.1f", herald, l / t / n * 1e6, bench
        if (d != "") printf " %s=%.1f", name, d
        if (m != "") printf " mhd_floor_us=%.1f", m
        if (d != "" && m != "") {
          floor = m + bench + d
          printf " floor_us=%.1f floor_ratio_cpu=%.2f", floor, herald / floor
        }
        printf " budget_us=%.0f", c * 1e6 / (0.5 * b) }')" \
    "load=$(cut -d' ' -f1 /proc/loadavg)"
  if [ "$backend" = postgres ]; then stop_throwaway_postgres; fi
}

for backend in $backends; do run_backend "$backend"; done
