# The setup the load benchmarks share, sourced after they set `work`, `sink` and `port`: stops
# herald serve (`serve_pid`), the sink and a throwaway PostgreSQL on exit, starts the APNs sink of
# ../shared/bench/ on `port` (TLS, its certificate in $work/sink), makes a provider key, and
# exports the APNs settings that point `herald serve` and `herald bench` at the sink.
# shellcheck shell=bash
cleanup() {
  for pid in ${serve_pid:-} ${sink_pid:-}; do kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap 'cleanup; stop_throwaway_postgres 2>/dev/null || true' EXIT
. scripts/throwaway-postgres.sh

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

APNS_SINK_DIR="$work/sink" "$sink" "$port" >"$work/sink.log" 2>&1 &
sink_pid=$!
for _ in $(seq 100); do
  [ -f "$work/sink/cert.pem" ] && curl -s --http2 --cacert "$work/sink/cert.pem" -o /dev/null "https://127.0.0.1:$port/" && break
  sleep 0.1
done
openssl ecparam -genkey -name prime256v1 -noout 2>/dev/null | openssl pkcs8 -topk8 -nocrypt -out "$work/key.p8"
export APNS_CA_FILE="$work/sink/cert.pem" APNS_PRODUCTION_URL="https://127.0.0.1:$port" \
  APNS_SANDBOX_URL="https://127.0.0.1:$port" APNS_AUTH_KEY_FILE="$work/key.p8" APNS_KEY_ID=BENCHKEY01 \
  APPLE_TEAM_ID=BENCHTEAM1 TOPIC=com.example.bench
