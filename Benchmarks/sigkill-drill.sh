#!/usr/bin/env bash
# The SIGKILL drill (issue 18): two `herald serve` share one throwaway PostgreSQL and one
# `herald simulator`; NOTIFICATIONS notifications of TOKENS tokens each (200 × 10) fall due in the
# same second, and one instance is killed with SIGKILL KILL_AFTER seconds (0.3) after that second.
# When the other has finished everything, each token's deliveries are counted at the simulator.
# Per run it prints: tokens lost (never delivered; must be 0), duplicates (tokens delivered more
# than once) and in-flight (pushes of the killed instance's notifications that reached the
# simulator by the kill but had no result in the database just after it: sent minus recorded),
# with how many of those reached it in the last 100 ms before the kill; the acceptance is
# lost = 0 and duplicates <= in-flight in every run.
#   RUNS=10 HERALD=.build/release/herald Benchmarks/sigkill-drill.sh
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-10}
notifications=${NOTIFICATIONS:-200}
tokens_each=${TOKENS:-10}
kill_after=${KILL_AFTER:-0.3}
lease=${LEASE_SECONDS:-10}
lead_time=${LEAD_SECONDS:-10}
herald=${HERALD:-.build/release/herald}
if [ -z "${HERALD:-}" ]; then swift build -c release --product herald >/dev/null; fi
work=$(mktemp -d /tmp/herald-drill.XXXXXX)
cleanup() {
  # Only this script's own background processes that are still running.
  for pid in $(jobs -p); do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
  stop_throwaway_postgres
}
# shellcheck source=scripts/throwaway-postgres.sh
. scripts/throwaway-postgres.sh
start_throwaway_postgres
trap cleanup EXIT
psql() { "$THROWAWAY_PG_BIN/psql" -X -q -t -A -v ON_ERROR_STOP=1 "$@"; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { for _ in $(seq 400); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; cat "$1" >&2; return 1; }

openssl ecparam -genkey -name prime256v1 -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/key.p8"
export APNS_AUTH_KEY_FILE="$work/key.p8" APNS_KEY_ID=DRILLKEY01 APPLE_TEAM_ID=DRILLTEAM1 TOPIC=com.example.drill
simulator_args=(--port 0 --control-port 0 --key "$APNS_KEY_ID:$APNS_AUTH_KEY_FILE" --team "$APPLE_TEAM_ID"
  --topic "$TOPIC" --cert-out "$work/ca.pem")
# Keep every delivery of a run when the simulator's registry is bounded by a flag.
capacity_flag=$("$herald" simulator --help | grep -oE -- '--max-deliveries|--delivery-capacity' | head -n 1 || true)
[ -z "$capacity_flag" ] || simulator_args+=("$capacity_flag" $((notifications * tokens_each * 3)))
"$herald" simulator "${simulator_args[@]}" >"$work/simulator.log" 2>&1 &
wait_for "$work/simulator.log" "Control API"
apns_url=$(grep -oE 'APNs URL +https://[0-9.:]+' "$work/simulator.log" | grep -oE 'https://[0-9.:]+')
control_url=$(grep -oE 'Control API +http://[0-9.:]+' "$work/simulator.log" | grep -oE 'http://[0-9.:]+')
export APNS_CA_FILE="$work/ca.pem" APNS_PRODUCTION_URL="$apns_url" APNS_SANDBOX_URL="$apns_url"
api_key=drill-api-key-0123456789

echo "== machine: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg); herald: $herald"
echo "== $notifications notifications x $tokens_each tokens due in one second; SIGKILL ${kill_after}s after; lease ${lease}s"
failed=0
for run in $(seq "$runs"); do
  db="drill_$run"
  psql "$THROWAWAY_PG_URL" -c "CREATE DATABASE $db" >/dev/null
  db_url="${THROWAWAY_PG_URL%/*}/$db"
  curl -sf -X DELETE "$control_url/deliveries" >/dev/null
  ports=()
  serve_pids=()
  for instance in a b; do
    port=$(free_port)
    PORT=$port HOST=127.0.0.1 DATABASE_URL="$db_url" HERALD_API_KEYS=$api_key LOG_LEVEL=warning \
      HERALD_JOB_LEASE_SECONDS=$lease "$herald" serve >"$work/serve-$run-$instance.log" 2>&1 &
    serve_pids+=($!)
    ports+=("$port")
  done
  for port in "${ports[@]}"; do
    for _ in $(seq 400); do curl -sf "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.05; done
  done

  # Create the notifications (through both instances), all due at the same whole second, then
  # kill the first instance KILL_AFTER seconds after it.
  python3 - "$run" "$notifications" "$tokens_each" "$kill_after" "${ports[@]}" "$api_key" "${serve_pids[0]}" "$lead_time" \
    >"$work/run-$run.json" <<'PY'
import concurrent.futures, json, math, os, signal, sys, time, urllib.request
run, count, each, kill_after = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
ports, key, victim, lead = sys.argv[5:7], sys.argv[7], int(sys.argv[8]), int(sys.argv[9])
due = math.ceil(time.time()) + lead
def create(n):
    tokens = ["%02x%06x%04x" % (run, n, t) + "0" * 52 for t in range(each)]
    body = json.dumps({"tokens": tokens, "send_at": due, "payload": {"aps": {"alert": "drill %d" % n}}}).encode()
    request = urllib.request.Request(
        "http://127.0.0.1:%s/v1/notifications" % ports[n % 2], data=body, method="POST",
        headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    urllib.request.urlopen(request).read()
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    list(pool.map(create, range(count)))
if time.time() > due:
    sys.exit("creating the notifications took past their due time; raise LEAD_SECONDS")
time.sleep(due + kill_after - time.time())
os.kill(victim, signal.SIGKILL)
print(json.dumps({"due": due, "killed_at": time.time()}))
PY
  victim=${serve_pids[0]}
  # Just after the kill: what the database holds, and which notifications the victim was sending.
  psql "$db_url" -c "SELECT token FROM notification_deliveries WHERE status <> 'pending'" >"$work/recorded-$run.txt"
  psql "$db_url" -c "SELECT payload FROM jobs WHERE status = 'running' AND lease_owner LIKE '%-$victim-%'" \
    >"$work/victim-jobs-$run.txt"
  { wait "$victim"; } 2>/dev/null || true

  for _ in $(seq 1200); do
    left=$(psql "$db_url" -c "SELECT COUNT(*) FROM notifications WHERE status NOT IN ('done', 'failed')")
    [ "$left" = 0 ] && break
    sleep 0.1
  done
  psql "$db_url" -c "SELECT n.id, d.token FROM notification_deliveries d JOIN notifications n ON n.id = d.notification_id" \
    >"$work/all-$run.txt"
  curl -sf "$control_url/deliveries?limit=100000" >"$work/deliveries-$run.json"
  kill -TERM "${serve_pids[1]}" 2>/dev/null || true
  wait "${serve_pids[1]}" 2>/dev/null || true

  python3 - "$work" "$run" "$left" <<'PY' || failed=1
import collections, datetime, json, sys
work, run, left = sys.argv[1], sys.argv[2], int(sys.argv[3])
timing = json.load(open(f"{work}/run-{run}.json"))
killed = timing["killed_at"]
recorded = set(open(f"{work}/recorded-{run}.txt").read().split())
victim = {json.loads(line)["notification_id"] for line in open(f"{work}/victim-jobs-{run}.txt") if line.strip()}
tokens_of = collections.defaultdict(set)
every = set()
for line in open(f"{work}/all-{run}.txt"):
    if line.strip():
        notification, token = line.strip().split("|")
        tokens_of[notification].add(token)
        every.add(token)
deliveries = [d for d in json.load(open(f"{work}/deliveries-{run}.json"))["deliveries"] if d.get("status") == 200]
def at(d):
    return datetime.datetime.fromisoformat(d["received_at"].replace("Z", "+00:00")).timestamp()
counts = collections.Counter(d["token"] for d in deliveries if d.get("token") in every)
victim_tokens = set().union(*(tokens_of[n] for n in victim)) if victim else set()
# Reached the simulator by the kill (or from the victim's socket buffers just after, well before
# the lease lets the survivor take over) with no result written.
early = {d["token"] for d in deliveries if at(d) < killed + 1.0}
in_flight = len((victim_tokens & early) - recorded)
# Of those, the ones that reached the simulator in the last 100 ms before the kill or after it:
# the pushes still unanswered or waiting for the transaction that writes their results.
late = {d["token"] for d in deliveries if killed - 0.1 <= at(d) < killed + 1.0}
recent = len((victim_tokens & late) - recorded)
lost = len(every) - len(counts)
duplicates = sum(1 for c in counts.values() if c > 1)
extra = sum(c - 1 for c in counts.values() if c > 1)
ok = left == 0 and lost == 0 and extra <= in_flight
print(f"run {run}: tokens={len(every)} delivered={len(counts)} lost={lost} duplicates={duplicates} "
      f"extra_deliveries={extra} in_flight_at_kill={in_flight} of_which_last_100ms={recent} "
      f"victim_notifications={len(victim)} "
      f"recorded_at_kill={len(recorded)} unfinished={left} {'ok' if ok else 'FAIL'}")
sys.exit(0 if ok else 1)
PY
done
exit "$failed"
