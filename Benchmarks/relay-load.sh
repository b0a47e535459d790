#!/usr/bin/env bash
# The Mastodon relay under load (issue 5): `herald relay` with APNs pointed at the APNs-shaped sink
# (../shared/bench/apns-sink), loaded by wrk on loopback, next to h2load's rate against the same
# sink in the same run, and `herald bench` (Herald's own APNs client) sending to it. Then the fault
# drill: stop the sink mid-load, time until new requests get 503, check none gets 202 while it is
# down, start it again, time until 202.
# The full-speed stage alternates h2load and wrk ROUNDS times (default 5) and reports medians, the
# median of each round's own ratio (its wrk run over the h2load run just before it, which the
# machine's drift between rounds disturbs less), and the relay's CPU time per request, steadier
# than rates when other work shares the machine.
# The Go reference (issue 34): Benchmarks/go-relay, the same relay written the ordinary way with
# Go's standard library (net/http, its HTTP/2 client, crypto/ecdsa), built once into the run's
# directory and loaded in each full-speed round with the same wrk script and duration against the
# same sink, before herald's relay in even rounds and after it in odd ones. Reported: its rate
# (go_relay_rate), herald's rate over it (ratio_to_go, the median of the rounds' own ratios) and its
# CPU time per request (go_cpu_us_per_request). It answers after APNs has answered, where herald
# answers once the push is handed to its connection. Herald answers 503 when too many pushes wait
# for APNs, which wrk counts in its rate: ratio_to_go_2xx compares the rates of 2xx answers only.
# Skipped, saying so, when `go` is absent.
# wrk runs WRK_THREADS threads (default 1), as h2load runs one: on a two-core machine the load
# generator shares the cores with the relay and the sink. With a second wrk thread the relay's own
# CPU time per request was the same, wrk's rose from 7-9 µs to 9-12, and the relay's rate fell by
# about 5% (alternating runs in two sittings). One wrk thread reached 80,000-139,000 requests a
# second against the floor below, which it may bound in slow stretches; the floor's CPU time per
# request is the figure to compare there.
# h2load sends what the relay sends for each push, with values of the same length: an
# ES256-JWT-shaped `authorization` as long as the one the relay signs (key BENCHKEY01, team
# BENCHTEAM1), `apns-id`, `apns-push-type`, `apns-priority`, `apns-expiration` and `apns-topic`.
# Every load is bounded by -d; only 127.0.0.1 is used.
# CONCURRENCY_SERIES="64 128 256 ..." adds a stage of back-to-back runs at those connection counts,
# with a watchdog for runs in which the relay stalls (SERIES_ROUNDS, STALL_DIR).
# Usage: [RELAY_LOG_LEVEL=info] [DURATION=10s] [ROUNDS=5] Benchmarks/relay-load.sh   (after `make release`, or
# HERALD_BIN=path/to/herald; needs wrk, h2load, h2o, and go for the Go reference: scripts/bootstrap.sh --bench)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-10s}
rounds=${ROUNDS:-5}
wrk_threads=${WRK_THREADS:-1}
# error: no access log, the relay's own cost; info (the default) adds one access-log line per request.
log_level=${RELAY_LOG_LEVEL:-error}
relay_port=${RELAY_PORT:-3950}
sink_port=${SINK_PORT:-8453}
sink=${APNS_SINK:-../shared/bench/apns-sink}
work=$(mktemp -d /tmp/herald-relay-bench.XXXXXX)
cleanup() {
  [ -n "${relay_pid:-}" ] && kill -TERM "$relay_pid" 2>/dev/null && wait "$relay_pid" 2>/dev/null
  [ -n "${sink_pid:-}" ] && kill "$sink_pid" 2>/dev/null && wait "$sink_pid" 2>/dev/null
  [ -n "${floor_pid:-}" ] && kill "$floor_pid" 2>/dev/null && wait "$floor_pid" 2>/dev/null
  [ -n "${go_relay_pid:-}" ] && kill -TERM "$go_relay_pid" 2>/dev/null && wait "$go_relay_pid" 2>/dev/null
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
  APNS_CA_FILE="$work/sink/cert.pem" PORT=$relay_port HOST=127.0.0.1 LOG_LEVEL="$log_level" \
  DATABASE_URL="sqlite:$work/relay.sqlite" "${HERALD_BIN:-.build/release/herald}" relay >"$work/relay.log" 2>&1 &
relay_pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$relay_port/" >/dev/null 2>&1 && break; sleep 0.1; done

# The Go reference relay, with herald relay's configuration, on the port after the floor's.
go_relay_port=$((relay_port + 2)); go_relay_pid=
if ! command -v go >/dev/null; then
  echo "relay-load: Go relay skipped (no go on PATH; scripts/bootstrap.sh --bench installs golang-go)"
elif ! (cd Benchmarks/go-relay && go build -o "$work/go-relay" .) >"$work/go-build.log" 2>&1; then
  echo "relay-load: Go relay skipped (go build failed: $(head -c 300 "$work/go-build.log"))"
else
  APNS_AUTH_KEY="$(cat "$work/key.p8")" APNS_KEY_ID=BENCHKEY01 APPLE_TEAM_ID=BENCHTEAM1 TOPIC=com.example.bench \
    APNS_PRODUCTION_URL="https://127.0.0.1:$sink_port" APNS_SANDBOX_URL="https://127.0.0.1:$sink_port" \
    APNS_CA_FILE="$work/sink/cert.pem" PORT=$go_relay_port "$work/go-relay" >"$work/go-relay.log" 2>&1 &
  go_relay_pid=$!
  for _ in $(seq 100); do curl -fs "http://127.0.0.1:$go_relay_port/" >/dev/null 2>&1 && break; sleep 0.1; done
fi

token=$(printf 'ab%.0s' $(seq 32))
body=$(head -c 300 /dev/urandom | base64 -w0 | head -c 300)
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.path = "/push/$token/0FE8C1A6-4B7E-4F7A-9E2A-0D3C1B6A9F10"
wrk.headers["Content-Encoding"] = "aes128gcm"
wrk.headers["TTL"] = "3600"
wrk.headers["Urgency"] = "normal"
wrk.body = "$body"
function done(summary, latency, requests)
  io.write(string.format("wrk: non2xx_or_3xx=%d socket_errors=%d\n", summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
LUA
# The same script at a fixed rate: 53 connections, one request every 10 ms plus the answer time
# each, which lands at about 5,000 req/s on loopback.
sed 's/^function done/function delay() return 10 end\nfunction done/' "$work/post.lua" >"$work/post-5k.lua"

rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$relay_pid/status"; }
# CPU time (user + system, clock ticks) the relay used: per request it is steadier than the rate
# when other work shares the machine.
cpu_ticks() { awk '{print $14 + $15}' "/proc/${1:-$relay_pid}/stat"; }
per_request_us() { # ticks requests
  awk -v t="$1" -v n="$2" -v hz="$(getconf CLK_TCK)" 'BEGIN {printf "%.1f", (n > 0 ? t * 1e6 / hz / n : 0)}'
}
hwm() { awk '/VmHWM/ {printf "%.1f", $2/1024}' "/proc/$relay_pid/status"; }
# The relay's CPU ticks by thread name ("name ticks" lines): libmicrohttpd's MHD-worker threads,
# herald-io (the APNs connection), herald-log, and the rest. Threads that end in between are lost.
thread_ticks() {
  for task in /proc/"$relay_pid"/task/*; do
    echo "$(tr -d ' ' <"$task/comm" 2>/dev/null) $(awk '{print $14 + $15}' "$task/stat" 2>/dev/null)"
  done | awk 'NF == 2 {ticks[$1] += $2} END {for (name in ticks) print name, ticks[name]}'
}
# Per request, by thread name, from two thread_ticks snapshots: "MHD-worker=19.2 herald-io=6.1 …".
thread_split() { # before after requests
  awk -v n="$3" -v hz="$(getconf CLK_TCK)" 'NR == FNR {before[$1] = $2; next}
    {used = $2 - before[$1]; if (used > 0) printf "%s=%.1f ", $1, used * 1e6 / hz / n}' "$1" "$2"
}
b64url() { base64 -w0 | tr '+/' '-_' | tr -d '='; }
jwt="$(printf '{"alg":"ES256","kid":"BENCHKEY01"}' | b64url).$(printf '{"iss":"BENCHTEAM1","iat":%s}' "$(date +%s)" | b64url).$(head -c 64 /dev/urandom | b64url)"
h2load_rate() {
  # The payload the relay builds from the wrk request: the body, base64url-encoded, and its id.
  printf '{"aps":{"alert":{"loc-key":"apns-default-message"},"mutable-content":1},"e":"aes128gcm","i":"0FE8C1A6-4B7E-4F7A-9E2A-0D3C1B6A9F10","m":"%s"}' \
    "$(printf '%s' "$body" | b64url)" >"$work/apns.json"
  h2load -n 100000 -c 1 -m 1000 -d "$work/apns.json" -H 'apns-topic: com.example.bench' -H 'apns-push-type: alert' \
    -H "authorization: bearer $jwt" -H 'apns-id: 0f6a3c1e-3b7d-4c8e-9a51-2d4e6f708192' -H 'apns-priority: 10' \
    -H "apns-expiration: $(($(date +%s) + 3600))" "https://127.0.0.1:$sink_port/3/device/$token" | grep -E 'finished in' \
    | sed -E 's/.* ([0-9.]+) req\/s.*/\1/'
}

# The second reference: herald bench, Herald's own APNs client, sending 10,000 pushes to the same
# sink, as Benchmarks/live-activities.sh measures it. The relay takes a request and sends a push with
# no database at all: its ratio to this is what an API path that also stores each request has above it.
herald_bench_rate() {
  APNS_AUTH_KEY_FILE="$work/key.p8" APNS_KEY_ID=BENCHKEY01 APPLE_TEAM_ID=BENCHTEAM1 TOPIC=com.example.bench \
    APNS_CA_FILE="$work/sink/cert.pem" "${HERALD_BIN:-.build/release/herald}" bench \
    --url "https://127.0.0.1:$sink_port" --count 10000 --connections 1 --concurrency 1000 2>/dev/null \
    | tail -n 1 | sed -E 's/.* rate=([0-9.]+)\/s.*/\1/'
}

median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "== relay at full speed (wrk -t$wrk_threads -c64 -d$duration), h2load against the sink in the same run, alternating $rounds times"
# Besides the relay's CPU time per request, the sink's and wrk's: the three share the machine,
# so the relay's rate is bounded by their sum.
references=(); rates=(); paired=(); cpus=(); sink_cpus=(); wrk_cpus=(); bench_paired=()
go_rates=(); go_paired=(); go_cpus=(); go_paired_2xx=()
# The rate of 2xx answers from wrk's output: its rate times the share of answers that were 2xx.
ok_rate() { awk '/requests in/ {n = $1} /Requests\/sec/ {r = $2} /^wrk: / {split($2, e, "="); bad = e[2]}
  END {printf "%.2f", (n > 0 ? r * (n - bad) / n : 0)}' <<<"$1"; }
# The Go relay under the same load: sets go_rate, go_cpu and go_wrk (wrk's error line).
go_relay_load() {
  local go_before out
  go_before=$(cpu_ticks "$go_relay_pid")
  out=$(wrk -t"$wrk_threads" -c64 -d"$duration" -s "$work/post.lua" "http://127.0.0.1:$go_relay_port")
  go_cpu=$(per_request_us $(($(cpu_ticks "$go_relay_pid") - go_before)) "$(awk '/requests in/ {print $1}' <<<"$out")")
  go_rate=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  go_ok_rate=$(ok_rate "$out")
  go_wrk=$(grep -E '^wrk:' <<<"$out" | sed 's/^wrk:/go_wrk:/')
}
for i in $(seq "$rounds"); do
  # Even rounds load the Go relay first, odd ones after herald's, so drift favours neither.
  [ -n "$go_relay_pid" ] && [ $((i % 2)) -eq 0 ] && go_relay_load
  references+=("$(h2load_rate)")
  bench_rate=$(herald_bench_rate)
  before=$(cpu_ticks); sink_before=$(cpu_ticks "$sink_pid"); thread_ticks >"$work/threads-before"
  max=$(/usr/bin/time -f 'cpu %U %S' -o "$work/wrk-time" \
    wrk -t"$wrk_threads" -c64 -d"$duration" --latency -s "$work/post.lua" "http://127.0.0.1:$relay_port")
  requests=$(awk '/requests in/ {print $1}' <<<"$max")
  thread_ticks >"$work/threads-after"
  cpus+=("$(per_request_us $(($(cpu_ticks) - before)) "$requests")")
  sink_cpus+=("$(per_request_us $(($(cpu_ticks "$sink_pid") - sink_before)) "$requests")")
  wrk_cpus+=("$(awk -v n="$requests" '/^cpu / {printf "%.1f", ($2 + $3) * 1e6 / n}' "$work/wrk-time")")
  rates+=("$(awk '/Requests\/sec/ {print $2}' <<<"$max")")
  paired+=("$(awk -v a="${rates[-1]}" -v b="${references[-1]}" 'BEGIN {printf "%.3f", a/b}')")
  bench_paired+=("$(awk -v a="${rates[-1]}" -v b="$bench_rate" 'BEGIN {printf "%.3f", a/b}')")
  go_fields=""
  if [ -n "$go_relay_pid" ]; then
    [ $((i % 2)) -eq 1 ] && go_relay_load
    go_rates+=("$go_rate"); go_cpus+=("$go_cpu")
    go_paired+=("$(awk -v a="${rates[-1]}" -v b="$go_rate" 'BEGIN {printf "%.3f", (b > 0 ? a/b : 0)}')")
    go_paired_2xx+=("$(awk -v a="$(ok_rate "$max")" -v b="$go_ok_rate" 'BEGIN {printf "%.3f", (b > 0 ? a/b : 0)}')")
    go_fields=" go_relay_rate=$go_rate ratio_to_go=${go_paired[-1]} relay_2xx_rate=$(ok_rate "$max") go_relay_2xx_rate=$go_ok_rate ratio_to_go_2xx=${go_paired_2xx[-1]} go_cpu_us_per_request=$go_cpu $go_wrk"
  fi
  echo "round $i: h2load_sink_rate=${references[-1]} relay_rate=${rates[-1]} ratio=${paired[-1]} herald_bench_rate=$bench_rate ratio_to_herald_bench=${bench_paired[-1]} p50=$(awk '/ 50%/ {print $2}' <<<"$max") p99=$(awk '/ 99%/ {print $2}' <<<"$max") cpu_us_per_request: relay=${cpus[-1]} sink=${sink_cpus[-1]} wrk=${wrk_cpus[-1]} relay_threads_us_per_request: $(thread_split "$work/threads-before" "$work/threads-after" "$requests")$(grep -E '^wrk:' <<<"$max")$go_fields"
done
go_summary=""
if [ -n "$go_relay_pid" ]; then
  go_summary="go_relay_rate=$(printf '%s\n' "${go_rates[@]}" | median) ratio_to_go=$(printf '%s\n' "${go_paired[@]}" | median) ratio_to_go_2xx=$(printf '%s\n' "${go_paired_2xx[@]}" | median) go_cpu_us_per_request=$(printf '%s\n' "${go_cpus[@]}" | median) "
  kill -TERM "$go_relay_pid"; wait "$go_relay_pid" 2>/dev/null || true; go_relay_pid=
fi
reference=$(printf '%s\n' "${references[@]}" | median)
rate=$(printf '%s\n' "${rates[@]}" | median)
echo "relay-load: log_level=$log_level relay_rate=$rate h2load_sink_rate=$reference ratio=$(awk -v a="$rate" -v b="$reference" 'BEGIN {printf "%.2f", a/b}') paired_ratio=$(printf '%s\n' "${paired[@]}" | median) ratio_to_herald_bench=$(printf '%s\n' "${bench_paired[@]}" | median) cpu_us_per_request=$(printf '%s\n' "${cpus[@]}" | median) sink_cpu_us=$(printf '%s\n' "${sink_cpus[@]}" | median) wrk_cpu_us=$(printf '%s\n' "${wrk_cpus[@]}" | median) rss_mb=$(rss) peak_rss_mb=$(hwm) $go_summary(medians)"

# The floor of the HTTP side: libmicrohttpd in C, set up as Herald's server, answering 202
# without doing anything (Benchmarks/mhd-floor.c). Needs gcc; skipped without it.
if command -v gcc >/dev/null && gcc -O2 -o "$work/mhd-floor" Benchmarks/mhd-floor.c -lmicrohttpd 2>"$work/gcc.log"; then
  "$work/mhd-floor" "$((relay_port + 1))" &
  floor_pid=$!
  for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$((relay_port + 1))/" && break; sleep 0.1; done
  floor_before=$(cpu_ticks "$floor_pid")
  floor=$(wrk -t"$wrk_threads" -c64 -d"$duration" -s "$work/post.lua" "http://127.0.0.1:$((relay_port + 1))")
  floor_cpu=$(per_request_us $(($(cpu_ticks "$floor_pid") - floor_before)) "$(awk '/requests in/ {print $1}' <<<"$floor")")
  kill "$floor_pid"; wait "$floor_pid" 2>/dev/null || true; floor_pid=
  echo "relay-load: floor (libmicrohttpd in C answering 202, nothing else): rate=$(awk '/Requests\/sec/ {print $2}' <<<"$floor") cpu_us_per_request=$floor_cpu"
else
  echo "relay-load: floor skipped (no gcc or libmicrohttpd headers: $(head -c 200 "$work/gcc.log" 2>/dev/null))"
fi

echo "== relay at about 5,000 req/s (wrk -t2 -c53, 10 ms between requests per connection)"
fixed=$(wrk -t2 -c53 -d"$duration" --latency -s "$work/post-5k.lua" "http://127.0.0.1:$relay_port")
echo "$fixed" | grep -E 'Requests/sec|50%|99%|wrk:'
echo "relay-load: fixed_rate=$(awk '/Requests\/sec/ {print $2}' <<<"$fixed") p50=$(awk '/ 50%/ {print $2}' <<<"$fixed") p99=$(awk '/ 99%/ {print $2}' <<<"$fixed") rss_mb=$(rss) peak_rss_mb=$(hwm)"

if [ -n "${CONCURRENCY_SERIES:-}" ]; then
  # Back-to-back 2 s runs at the given connection counts (e.g. "64 128 256 128 256 64 256"),
  # repeated SERIES_ROUNDS times. While each runs, a watchdog samples the relay's CPU time: a run
  # in which the relay does almost nothing for 0.8 s is reported as a stall, with the relay's
  # thread stacks (gdb) in $STALL_DIR (default /tmp).
  echo "== relay at changing concurrency (${SERIES_ROUNDS:-3} rounds of: $CONCURRENCY_SERIES)"
  for round in $(seq "${SERIES_ROUNDS:-3}"); do
    line=""
    for connections in $CONCURRENCY_SERIES; do
      wrk -t"$wrk_threads" -c"$connections" -d2s -s "$work/post.lua" "http://127.0.0.1:$relay_port" >"$work/series.out" &
      series_pid=$!
      sleep 0.4
      idle=0
      for _ in 1 2 3; do
        before=$(cpu_ticks); sleep 0.4
        if [ $(($(cpu_ticks) - before)) -le 1 ]; then idle=$((idle + 1)); else idle=0; fi
        if [ "$idle" -ge 2 ]; then
          stacks="${STALL_DIR:-/tmp}/relay-stall-$(date +%s).txt"
          {
            # Sockets first (unread bytes on the relay's side show requests it has not read), then
            # the threads, then the relay's own counters.
            ss -tn state established "( sport = :$relay_port )" | awk 'NR > 1 {connections++; if ($1 > 0) unread++; queued += $1} END {printf "relay sockets: %d, with unread bytes: %d (%d bytes)\n", connections, unread, queued}'
            ss -ltn "( sport = :$relay_port )" | awk 'NR > 1 {print "listen socket: " $2 " connections not yet accepted (backlog " $3 ")"}'
            gdb -p "$relay_pid" -batch -ex "thread apply all bt 16" 2>&1 || true
            curl -s -m 2 "http://127.0.0.1:$relay_port/metrics" | grep -E '^herald_(relay_in_flight|http_requests_in_flight|relay_requests_total)'
          } >"$stacks"
          echo "relay-load: stall round=$round connections=$connections stacks=$stacks"
          break
        fi
      done
      wait "$series_pid" || true
      line+="c$connections=$(awk '/Requests\/sec/ {printf "%d", $2}' "$work/series.out") "
    done
    echo "relay-load: series round=$round $line"
  done
fi

echo "== fault: stop the sink mid-load, then start it again"
wrk -t1 -c16 -d8s -s "$work/post.lua" "http://127.0.0.1:$relay_port" >"$work/fault-wrk.log" 2>&1 &
wrk_pid=$!
sleep 2
# The status code; the response headers go to $work/fault-headers.
post() { curl -s -o /dev/null -D "$work/fault-headers" -w '%{http_code}' -X POST -H 'Content-Encoding: aes128gcm' \
  --data-binary x "http://127.0.0.1:$relay_port/push/$token/fault"; }
kill "$sink_pid"; wait "$sink_pid" 2>/dev/null || true; sink_pid=
stopped=$(date +%s.%N)
first503=""
while :; do
  code=$(post)
  now=$(date +%s.%N)
  if [ "$code" = 503 ]; then
    first503=$(awk -v a="$now" -v b="$stopped" 'BEGIN {printf "%.3f", a-b}')
    retry_after=$(awk -F': *' 'tolower($1) == "retry-after" {gsub(/\r/, "", $2); print $2}' "$work/fault-headers")
    break
  fi
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
echo "relay-load: fault first_503_after_s=${first503:-never} retry_after=${retry_after:-missing} accepted_while_down=$accepted_while_down/$checked first_202_after_restart_s=${first202:-never}"
