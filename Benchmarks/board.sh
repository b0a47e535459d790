#!/usr/bin/env bash
# Live boards (issue 35): BOARDS boards (default 100) of MEMBERS members (default 20), created with
# "start": "app" on a channel given by id, their broadcasts sent to the APNs sink of ../shared/bench/;
# every member posts once (its first post is the one a board persists), then wrk posts ETAs
# (1 to 60 minutes, a random member of a random board each time, each member with its own client
# token) for DURATION (default 60s) with CONNECTIONS connections (default 64), as fast as the machine
# takes them. In the same run, the same wrk against the same herald's /healthz for the same time:
# the reference. Prints the posts per second and their p50/p99 next to /healthz's, the ratio, the
# broadcasts per board per second (on average, and of the busiest board), and what
# herald wrote to files during the timed posts (/proc/PID/io write_bytes: the bytes the process
# caused to be written to storage, counted when it dirties a page; no sockets, and the log is at
# `warning`) next to the broadcasts made meanwhile; then, as a control, CONTROL (default 10s) of
# posts that change nothing: no broadcast, and what herald wrote. Loopback only; every wrk run is
# bounded by -d.
#   BOARDS=100 MEMBERS=20 DURATION=60s HERALD=.build/release/herald Benchmarks/board.sh
# Target: posts per second at least 0.5 of /healthz's; never more than one broadcast per board per
# second; no storage writes that grow with the posts.
set -euo pipefail
cd "$(dirname "$0")/.."
boards=${BOARDS:-100}
members=${MEMBERS:-20}
duration=${DURATION:-60s}
connections=${CONNECTIONS:-64}
port=${SINK_PORT:-8443}
sink=${APNS_SINK:-../shared/bench/apns-sink}
herald=${HERALD:-.build/release/herald}
[ -x "$herald" ] || swift build -c release --product herald >/dev/null
herald=$(realpath "$herald")
work=$(mktemp -d /tmp/herald-board.XXXXXX)
key=board-bench-key-0123456789abcdef
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
. Benchmarks/lib.sh

api_port=$(free_port)
# Every member posts from 127.0.0.1 and faster than a phone would: the client limits are off here.
PORT=$api_port HOST=127.0.0.1 DATABASE_URL="sqlite:$work/herald.sqlite" HERALD_API_KEYS=$key \
  HERALD_CLIENT_TOKEN_SECRET=$secret HERALD_CLIENT_IP_RATE_LIMIT=off HERALD_CLIENT_RATE_LIMIT=off \
  LOG_LEVEL=warning "$herald" serve >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$api_port/healthz" >/dev/null && break; sleep 0.1; done

echo "board: creating $boards boards of $members members and their tokens" >&2
: >"$work/posters.txt"
for b in $(seq "$boards"); do
  member_list=$(for m in $(seq "$members"); do printf '{"user_id": "b%dm%d", "name": "Member %d"},' "$b" "$m" "$m"; done)
  id=$(curl -sf "http://127.0.0.1:$api_port/v1/live-activities" -H "Authorization: Bearer $key" \
    -H 'Content-Type: application/json' \
    -d '{"start": "app", "attributes_type": "MeetupAttributes", "content_state": {"place": "Station"},
         "channel": {"id": "benchchannel'"$b"'"}, "members": ['"${member_list%,}"'],
         "board": {"arrival_alert": {"title": "Meetup", "body": "{name} has arrived"}}}' \
    | sed -E 's/.*"id":"([^"]*)".*/\1/')
  for m in $(seq "$members"); do
    token=$(HERALD_CLIENT_TOKEN_SECRET=$secret "$herald" client-token --user "b${b}m$m" --ttl 1h)
    echo "$id $token" >>"$work/posters.txt"
  done
done
# Every member's first post (persisted) before the timed run.
while read -r id token; do
  curl -sf -o /dev/null "http://127.0.0.1:$api_port/v1/client/live-activities/$id/board" \
    -H "Authorization: Bearer $token" -H 'Content-Type: application/json' -d '{"eta_minutes": 61}'
done <"$work/posters.txt"

cat >"$work/posts.lua" <<LUA
local posters = {}
for line in io.lines("$work/posters.txt") do
  local id, token = line:match("(%S+) (%S+)")
  posters[#posters + 1] = {id, token}
end
math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) % 1000)
failed = 0
function request()
  local poster = posters[math.random(#posters)]
  return wrk.format("POST", "/v1/client/live-activities/" .. poster[1] .. "/board",
    {["Authorization"] = "Bearer " .. poster[2], ["Content-Type"] = "application/json"},
    '{"eta_minutes": ' .. math.random(1, 60) .. '}')
end
function response(status) if status ~= 200 then failed = failed + 1 end end
local threads = {}
function setup(thread) threads[#threads + 1] = thread end
function done(summary, latency, requests)
  local total = 0
  for _, thread in ipairs(threads) do total = total + thread:get("failed") end
  io.write(string.format("posts: failed=%d socket_errors=%d\n", total,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA

write_bytes() { awk '/^write_bytes/ {print $2}' "/proc/$serve_pid/io"; }
metric() { curl -s "http://127.0.0.1:$api_port/metrics" -H "Authorization: Bearer $key" \
  | awk -v name="$1" '$1 == name {print $2}'; }
latency() { awk -v p="$2" '$1 == p"%" {print $2}' "$1"; }

echo "board: posting for $duration" >&2
broadcasts_before=$(metric herald_board_broadcasts_total); broadcasts_before=${broadcasts_before:-0}
bytes_before=$(write_bytes)
start=$(date +%s.%N)
[ -n "${PERF_OUT:-}" ] && { perf record -g -F 999 -p "$serve_pid" -o "$PERF_OUT" >/dev/null 2>&1 & perf_pid=$!; }
wrk -t2 -c"$connections" -d"$duration" --latency -s "$work/posts.lua" "http://127.0.0.1:$api_port" >"$work/posts.out"
[ -n "${perf_pid:-}" ] && { kill -INT "$perf_pid"; wait "$perf_pid" 2>/dev/null || true; }
elapsed=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN {print e - s}')
bytes_after=$(write_bytes)
broadcasts_after=$(metric herald_board_broadcasts_total)
end=$(date +%s.%N)
grep -E 'posts:|Requests/sec|Non-2xx' "$work/posts.out" >&2 || true

# The control: the same posts for CONTROL (default 10s), each member sending the ETA it already
# has (61): nothing changes, so nothing is broadcast, and herald writes nothing.
sed 's/math.random(1, 60)/61/' "$work/posts.lua" >"$work/same.lua"
# First every member back to 61 (a change, broadcast), then the broadcasts and their send jobs
# finish, then the measured control.
wrk -t2 -c"$connections" -d2s -s "$work/same.lua" "http://127.0.0.1:$api_port" >/dev/null
sleep 3
control_bytes_before=$(write_bytes)
control_broadcasts_before=$(metric herald_board_broadcasts_total)
wrk -t2 -c"$connections" -d"${CONTROL:-10s}" -s "$work/same.lua" "http://127.0.0.1:$api_port" >"$work/same.out"
control_bytes=$(($(write_bytes) - control_bytes_before))
control_broadcasts=$(awk -v a="$(metric herald_board_broadcasts_total)" -v b="$control_broadcasts_before" \
  'BEGIN {printf "%d", a - b}')
control_posts=$(awk '/requests in/ {print $1}' "$work/same.out")

echo "board: /healthz for $duration, the same wrk" >&2
wrk -t2 -c"$connections" -d"$duration" --latency "http://127.0.0.1:$api_port/healthz" >"$work/healthz.out"

kill -TERM "$serve_pid"; wait "$serve_pid" 2>/dev/null || true; serve_pid=
# Broadcasts per board per second, from the deliveries herald recorded during the timed posts
# (their time is APNs' answer, so a send job's own delay moves it): the busiest board's
# broadcasts divided by the seconds of the run.
max_per_second=$(python3 - "$work/herald.sqlite" "$start" "$end" <<'PY'
import sqlite3, sys, collections
db = sqlite3.connect(sys.argv[1])
start, end = float(sys.argv[2]) * 1000, float(sys.argv[3]) * 1000
rows = db.execute("SELECT live_activity_id FROM live_activity_deliveries WHERE route = 'broadcast' "
                  "AND at >= ? AND at <= ?", (start, end)).fetchall()
counts = collections.Counter(board for (board,) in rows)
print("%.2f" % (max(counts.values()) / ((end - start) / 1000)) if counts else 0)
PY
)
posts_rate=$(awk '/Requests\/sec/ {print $2}' "$work/posts.out")
healthz_rate=$(awk '/Requests\/sec/ {print $2}' "$work/healthz.out")
broadcasts=$(awk -v a="$broadcasts_after" -v b="$broadcasts_before" 'BEGIN {printf "%d", a - b}')
awk -v pr="$posts_rate" -v hr="$healthz_rate" -v p50="$(latency "$work/posts.out" 50)" \
  -v p99="$(latency "$work/posts.out" 99)" -v h50="$(latency "$work/healthz.out" 50)" \
  -v h99="$(latency "$work/healthz.out" 99)" -v n="$boards" -v t="$elapsed" -v bc="$broadcasts" \
  -v mx="$max_per_second" -v wb="$((bytes_after - bytes_before))" 'BEGIN {
    printf "bench-board: posts_per_s=%.0f p50=%s p99=%s healthz_per_s=%.0f healthz_p50=%s healthz_p99=%s ratio=%.2f\n",
      pr, p50, p99, hr, h50, h99, pr / hr
    printf "bench-board: broadcasts=%d per_board_per_s=%.2f busiest_board_per_s=%s\n", bc, bc / n / t, mx
    printf "bench-board: storage_write_bytes=%d (%.0f per broadcast, %.2f per post of %.0f)\n", wb,
      (bc ? wb / bc : 0), wb / (pr * t), pr * t
  }'
echo "bench-board: control (unchanged ETAs): posts=$control_posts broadcasts=$control_broadcasts storage_write_bytes=$control_bytes"
