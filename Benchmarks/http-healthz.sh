#!/usr/bin/env bash
# HTTP/1.1 throughput of `herald serve` next to a reference measured in the same run:
#   wrk -t2 -c64 -d10s against Herald's /healthz, and against h2o (Debian) serving a small static
#   file, alternating three times each. Prints every run, the medians, the ratio, error counts and
#   Herald's RSS before and after. Loopback only; every run is bounded by -d.
# Usage: Benchmarks/http-healthz.sh   (after `make release`, or HERALD_BIN=path/to/herald; scripts/bootstrap.sh --bench installs wrk/h2o)
set -euo pipefail
cd "$(dirname "$0")/.."
duration=${DURATION:-10s}
rounds=${ROUNDS:-3}
work=$(mktemp -d /tmp/herald-bench.XXXXXX)
herald_port=${HERALD_PORT:-3900}
h2o_port=${H2O_PORT:-3901}
cleanup() {
  [ -n "${herald_pid:-}" ] && kill -TERM "$herald_pid" 2>/dev/null && wait "$herald_pid" 2>/dev/null
  [ -n "${h2o_pid:-}" ] && kill "$h2o_pid" 2>/dev/null && wait "$h2o_pid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

printf '{"status":"ok"}' > "$work/healthz.json"
chmod 755 "$work"; chmod 644 "$work/healthz.json"   # h2o's workers may run as nobody
cat > "$work/h2o.conf" <<CONF
listen:
  port: $h2o_port
  host: 127.0.0.1
num-threads: 2
hosts:
  default:
    paths:
      /:
        file.dir: $work
access-log: /dev/null
error-log: $work/h2o-error.log
CONF
h2o -c "$work/h2o.conf" >/dev/null 2>&1 &
h2o_pid=$!
PORT=$herald_port HOST=127.0.0.1 LOG_LEVEL=warning DATABASE_URL="sqlite:$work/bench.sqlite" \
  "${HERALD_BIN:-.build/release/herald}" serve >"$work/herald.log" 2>&1 &
herald_pid=$!
for _ in $(seq 50); do
  curl -fs "http://127.0.0.1:$herald_port/healthz" >/dev/null 2>&1 && curl -fs "http://127.0.0.1:$h2o_port/healthz.json" >/dev/null 2>&1 && break
  sleep 0.2
done

rss() { awk '/VmRSS/ {printf "%.1f", $2/1024}' "/proc/$herald_pid/status"; }
run() { # name url → prints req/s, records errors
  local out
  out=$(wrk -t2 -c64 -d"$duration" "$2")
  local rate errors
  if grep -q 'Non-2xx' <<<"$out"; then echo "$1: non-2xx answers; see $work" >&2; fi
  rate=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  errors=$(awk '/Socket errors|Non-2xx/ {print}' <<<"$out")
  echo "$1 req/s=$rate ${errors:+errors: $errors}" >&2
  echo "$rate"
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "Herald RSS before: $(rss) MB" >&2
herald_rates=(); h2o_rates=()
for i in $(seq "$rounds"); do
  herald_rates+=("$(run "herald#$i" "http://127.0.0.1:$herald_port/healthz")")
  h2o_rates+=("$(run "h2o#$i" "http://127.0.0.1:$h2o_port/healthz.json")")
done
herald_median=$(printf '%s\n' "${herald_rates[@]}" | median)
h2o_median=$(printf '%s\n' "${h2o_rates[@]}" | median)
echo "Herald RSS after: $(rss) MB" >&2
ratio=$(awk -v a="$herald_median" -v b="$h2o_median" 'BEGIN {printf "%.2f", a/b}')
echo "bench-http: herald_median=$herald_median h2o_median=$h2o_median ratio=$ratio"
