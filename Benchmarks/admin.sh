#!/usr/bin/env bash
# The admin console's pages, empty and full: starts `herald serve --simulator` on SQLite, signs in,
# and times every page (N requests each, one at a time) beside GET /healthz in the same run, first
# on the empty database, then after writing DEVICES devices (POST /v1/devices/batch),
# NOTIFICATIONS notifications (scheduled a day ahead, so that none is sent) and ACTIVITIES Live
# Activities (started by the app, so that none is pushed), all through /v1, on 4 connections. Prints each page's
# p50 and p99 in milliseconds and the ratio of the full database's p99 to the empty one's: the
# console's pages must not grow with the data (each at most 2).
# Usage: Benchmarks/admin.sh [HERALD]   (DEVICES=1000000 NOTIFICATIONS=100000 ACTIVITIES=10000 N=200)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/serve-simulator.sh
herald=${1:-.build/release/herald}
[ -x "$herald" ] || { echo "admin bench: no herald at $herald (swift build -c release)" >&2; exit 1; }
herald=$(cd "$(dirname "$herald")" && pwd)/$(basename "$herald")
work=$(mktemp -d "${TMPDIR:-/tmp}/herald-admin-bench.XXXXXX")
server_pid=
trap '[ -n "$server_pid" ] && kill $server_pid 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
start_simulator_server "$herald" "$work" HERALD_API_KEYS="$key" HERALD_ADMIN_INSECURE_COOKIE=1 HERALD_LOG_LEVEL=warning

DEVICES=${DEVICES:-1000000} NOTIFICATIONS=${NOTIFICATIONS:-100000} ACTIVITIES=${ACTIVITIES:-10000} N=${N:-200} \
python3 - "$port" "$key" <<'PY'
import concurrent.futures, http.client, json, os, re, statistics, sys, time, urllib.parse
port, key = int(sys.argv[1]), sys.argv[2]
devices, notifications, activities, n = (int(os.environ[v]) for v in ("DEVICES", "NOTIFICATIONS", "ACTIVITIES", "N"))
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)

def call(method, path, body=None, headers=None):
    headers = dict(headers or {})
    if body is not None and not isinstance(body, bytes):
        body = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    connection.request(method, path, body, headers)
    answer = connection.getresponse()
    return answer.status, answer.getheaders(), answer.read()

api = {"Authorization": f"Bearer {key}"}
status, headers, page = call("GET", "/admin/sign-in")
csrf = re.search(rb'name="csrf" value="([^"]+)"', page).group(1).decode()
cookie = dict(headers)["Set-Cookie"].split(";")[0]
form = urllib.parse.urlencode({"csrf": csrf, "key": key, "next": "/admin"}).encode()
status, headers, _ = call("POST", "/admin/sign-in", form,
                          {"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie})
session = [v for k, v in headers if k == "Set-Cookie" and v.startswith("herald_admin=")][0].split(";")[0]
browser = {"Cookie": session}

def pages():
    _, _, body = call("GET", "/v1/notifications?limit=1", headers=api)
    notification = (json.loads(body)["notifications"] or [{"id": "00000000-0000-4000-8000-000000000000"}])[0]["id"]
    _, _, body = call("GET", "/v1/live-activities?limit=1", headers=api)
    activity = (json.loads(body)["live_activities"] or [{"id": "00000000-0000-4000-8000-000000000000"}])[0]["id"]
    return ["/healthz", "/admin", "/admin/notifications", f"/admin/notifications/{notification}",
            "/admin/live-activities", f"/admin/live-activities/{activity}", "/admin/devices",
            "/admin/devices?token_prefix=ab", "/admin/devices?tag=t7", "/admin/jobs", "/admin/webhooks",
            "/admin/wake-schedules", "/admin/channels", "/admin/send", "/admin/lock-screens"]

def measure():
    result = {}
    for path in pages():
        label = re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}", "{id}", path)
        times = []
        for _ in range(n):
            start = time.perf_counter()
            status, _, _ = call("GET", path, headers=browser)
            times.append((time.perf_counter() - start) * 1000)
            assert status in (200, 404), f"{path}: {status}"
        times.sort()
        result[label] = (statistics.median(times), times[int(len(times) * 0.99) - 1])
    return result

empty = measure()
start = time.time()

def seed(requests):
    """Sends (method, path, body, ok statuses) on 4 connections of their own, every answer checked."""
    def worker(part):
        own = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        for method, path, body, ok in part:
            own.request(method, path, json.dumps(body).encode(), {**api, "Content-Type": "application/json"})
            answer = own.getresponse()
            text = answer.read()
            assert answer.status in ok, f"{path}: {answer.status} {text[:300]}"
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(worker, [requests[index::4] for index in range(4)]))

# Devices in batches of 1,000, each with a tag; without users, whose per-user quota is not what
# this measures.
seed([("POST", "/v1/devices/batch",
       {"devices": [{"token": f"{i:064x}", "tags": [f"t{i % 10}"]} for i in range(first, min(first + 1000, devices))]},
       (200,)) for first in range(0, devices, 1000)])
print(f"wrote {devices} devices in {time.time() - start:.0f} s", flush=True)
later = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 86400))
seed([("POST", "/v1/notifications",
       {"tokens": [f"{i % devices:064x}"], "send_at": later, "payload": {"aps": {"alert": "x"}}}, (202,))
      for i in range(notifications)])
seed([("POST", "/v1/live-activities",
       {"start": "app", "attributes_type": "BenchAttributes", "content_state": {"i": i}, "audience": {"users": [f"u{i}"]}},
       (200, 201)) for i in range(activities)])
print(f"wrote {devices} devices, {notifications} notifications, {activities} activities in {time.time() - start:.0f} s")
# The server closes a connection left idle while seeding: measure on a new one.
connection = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
full = measure()
print(f"{'page':40} {'empty p50':>10} {'empty p99':>10} {'full p50':>10} {'full p99':>10} {'p99 ratio':>10}")
worst = 0
for label in empty:
    e50, e99 = empty[label]; f50, f99 = full[label]
    ratio = f99 / e99
    if label != "/healthz": worst = max(worst, ratio)
    print(f"{label:40} {e50:10.2f} {e99:10.2f} {f50:10.2f} {f99:10.2f} {ratio:10.2f}")
print(f"worst page p99 ratio (full / empty): {worst:.2f} (target: at most 2)")
PY
