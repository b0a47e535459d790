#!/usr/bin/env bash
# The contract test (`make test`): schemathesis, from the virtual environment scripts/bootstrap.sh
# --test makes, generates requests for every /v1 operation of GET /v1/openapi.json and sends them
# to a live `herald serve --simulator` (SQLite in a temporary directory, loopback only). It fails
# on any 5xx, any answer that does not match its operation's schema (errors included: every
# operation's `default` is the one error format), a status the description does not declare, or
# a wrong Content-Type. The API-key operations run with the key, the /v1/client ones with a client
# token. Prints how many cases it generated. Usage: scripts/contract-test.sh [HERALD]
#   CONTRACT_MAX_EXAMPLES  cases per operation and phase (default 15)
#   CONTRACT_SEED          the generator's seed (default: a new one, printed, to replay a failure)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/serve-simulator.sh
herald=${1:-$(swift build --show-bin-path)/herald}
[ -x "$herald" ] || { echo "contract test: no herald executable at $herald (run swift build first)" >&2; exit 1; }
herald=$(cd "$(dirname "$herald")" && pwd)/$(basename "$herald")
venv=${HERALD_TEST_VENV:-$HOME/.cache/herald/test-venv}
schemathesis=$venv/bin/schemathesis
[ -x "$schemathesis" ] || { echo "contract test: no schemathesis at $schemathesis (run scripts/bootstrap.sh --test)" >&2; exit 1; }
max_examples=${CONTRACT_MAX_EXAMPLES:-15}
seed=${CONTRACT_SEED:-$((RANDOM * 32768 + RANDOM))}

work=$(mktemp -d "${TMPDIR:-/tmp}/herald-contract.XXXXXX")
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    [ -n "${CONTRACT_KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT

key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
secret=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# No client rate limits: a generated flood would be answered 429 and test little else.
start_simulator_server "$herald" "$work" HERALD_API_KEYS="$key" HERALD_CLIENT_TOKEN_SECRET="$secret" \
    HERALD_CLIENT_RATE_LIMIT=off HERALD_CLIENT_IP_RATE_LIMIT=off
token=$(HERALD_CLIENT_TOKEN_SECRET="$secret" "$herald" client-token --user contract-user --ttl 1h)
schema=http://127.0.0.1:$port/v1/openapi.json
echo "contract test: herald serve --simulator on :$port, seed $seed, $max_examples examples per operation and phase"

# Every example in the description holds for its own schema (request bodies and answers).
"$venv/bin/python" - "$schema" <<'EXAMPLES'
import json, sys, urllib.request
import jsonschema_rs

document = json.load(urllib.request.urlopen(sys.argv[1]))
components = document["components"]["schemas"]

def inlined(schema):
    if isinstance(schema, dict):
        reference = schema.get("$ref", "")
        if reference.startswith("#/components/schemas/"):
            return inlined(components[reference.rsplit("/", 1)[1]])
        return {key: inlined(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [inlined(item) for item in schema]
    return schema

checked, wrong = 0, []
for path, operations in document["paths"].items():
    for method, operation in operations.items():
        media = [("request", operation.get("requestBody", {}).get("content", {}).get("application/json"))]
        media += [(status, answer.get("content", {}).get("application/json"))
                  for status, answer in operation["responses"].items()]
        for where, content in media:
            if not content or "example" not in content:
                continue
            checked += 1
            validator = jsonschema_rs.validator_for(inlined(content["schema"]))
            for error in validator.iter_errors(content["example"]):
                wrong.append(f"{method.upper()} {path} {where}: {error}")
for line in wrong:
    print("contract test: example does not match its schema:", line, file=sys.stderr)
print(f"contract test: {checked} examples in the description, each valid for its schema")
sys.exit(1 if wrong else 0)
EXAMPLES

total=0
# run NAME CREDENTIAL FILTER...: one schemathesis run over the operations FILTER selects.
run() {
    local name=$1 credential=$2
    shift 2
    local log=$work/$name.log status=0
    "$schemathesis" run "$schema" "$@" \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
        --phases examples,coverage,fuzzing,stateful --max-examples "$max_examples" --seed "$seed" --workers 1 \
        --generation-database none --no-color --request-timeout 30 \
        -H "Authorization: Bearer $credential" >"$log" 2>&1 || status=$?
    local cases
    cases=$(grep -oE '[0-9]+ generated' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
    total=$((total + cases))
    echo "contract test: $name: $cases generated cases, exit $status"
    if [ "$status" -ne 0 ]; then
        cat "$log" >&2
        echo "contract test: herald's log:" >&2
        tail -n 50 "$work/serve.log" >&2
        exit 1
    fi
}
run api-key "$key" --exclude-path-regex '^/v1/client/'
run client-token "$token" --include-path-regex '^/v1/client/'
echo "contract test: $total generated cases over every /v1 operation, all answers as described"
