#!/usr/bin/env bash
# The documentation test (`make test`): runs the examples of README.md and docs/*.md as written
# against a `herald serve --simulator` and a `herald simulator` it starts on free ports, with a
# temporary SQLite database, and fails on any difference. Usage: scripts/doctest.sh [HERALD]
#
# The marking, on the line before a fenced block (an HTML comment, invisible on GitHub):
#   <!-- doctest -->                   run the block
#   <!-- doctest: background, until REGEX -->
#                                      run the block as a server that runs until stopped: in the
#                                      background, in a directory of its own (also its TMPDIR),
#                                      until a line of its output matches the extended REGEX
#                                      (within 60 s, without exiting first), then stop it
#   <!-- doctest: not run, REASON -->  never run it; the reason is required
# Every fenced block needs one of them, except `text` and `json` blocks (output and data) and
# unlabelled ones that do not start with a command (diagrams).
# In a run block, `# → EXPECTED` lines (consecutive ones join) follow the commands they check:
# their output must match EXPECTED, where `…` matches anything and runs of white space compare
# equal. When the last curl call of those commands has no `-w` of its own, the output checked
# starts with its HTTP status: `# → 202 {"id":"…", …}`. Every command must succeed, except
# that `# → [exit N] EXPECTED` expects the last command to exit N, and matches EXPECTED against
# what the commands wrote to standard output and standard error together.
# Every HTTP request must succeed too: each curl call (without a `-w` of its own) must get a
# 1xx, 2xx or 3xx status, whether or not an expectation follows, since `curl -s` exits 0 on a
# 404 or a 500. The one exception is the last curl call before a `# → ` line that starts with a
# status (`# → 404 {"error":"not_found", …}`): that status is the one expected, whatever it is.
# An example whose point is an error therefore declares it that way. A call with its own `-w`
# prints its status itself, for its expectation to check.
# The blocks of one file run in order in one bash, so variables carry over. The examples'
# addresses, in commands and expectations, become those of the servers it started:
# localhost:3000 (herald serve), 127.0.0.1:8443 and 127.0.0.1:8444 (herald simulator, APNs and
# control API) and /tmp/herald-apns-simulator-8443 (its certificate and key files). The blocks run
# in a directory of their own, where eckey.pem is the private key of the simulator's --cloudkit-key
# wake-key, made as docs/SIMULATOR.md makes it. KEY holds the API key and
# DATABASE_URL the server's database. `python` blocks run with python3.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
herald=${1:-$(swift build --show-bin-path)/herald}
[ -x "$herald" ] || { echo "doctest: no herald executable at $herald (run swift build first)" >&2; exit 1; }
herald=$(cd "$(dirname "$herald")" && pwd)/$(basename "$herald")

work=$(mktemp -d "${TMPDIR:-/tmp}/herald-doctest.XXXXXX")
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Waits until a server's log has a line matching $2, then prints it; fails after 60 s.
await_line() {
    local log=$1 pattern=$2 pid=$3
    for _ in $(seq 600); do
        if grep -m1 -E "$pattern" "$log" 2>/dev/null; then return 0; fi
        kill -0 "$pid" 2>/dev/null || { echo "doctest: the server stopped; its log:" >&2; cat "$log" >&2; exit 1; }
        sleep 0.1
    done
    echo "doctest: the server did not start within 60 s; its log:" >&2
    cat "$log" >&2
    exit 1
}

# Settings from the caller's environment would change what the examples answer.
unset HOST PORT LOG_LEVEL LOG_FORMAT HERALD_API_KEYS HERALD_APPS_FILE TOPIC APNS_AUTH_KEY APNS_AUTH_KEY_FILE \
    APNS_KEY_ID APPLE_TEAM_ID APNS_CA_FILE APNS_PRODUCTION_URL APNS_SANDBOX_URL \
    APNS_MANAGEMENT_PRODUCTION_URL APNS_MANAGEMENT_SANDBOX_URL APNS_ENVIRONMENT
unset HERALD_CLIENT_RATE_LIMIT HERALD_CLIENT_IP_RATE_LIMIT HERALD_RELAY_MAX_IN_FLIGHT HERALD_RELAY_IP_RATE_LIMIT
export KEY DATABASE_URL=sqlite:$work/serve/doctest.sqlite
KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
# The client-token secret of the server, which the examples' `herald client-token` reads too.
export HERALD_CLIENT_TOKEN_SECRET
HERALD_CLIENT_TOKEN_SECRET=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
unset HERALD_CLIENT_TOKEN_KEYS_FILE HERALD_CLIENT_TOKEN_AUDIENCE
mkdir "$work/serve" "$work/sim" "$work/run"
# The relay examples (README.md, docs/RELAY.md) need the relay mounted.
(cd "$work/serve" && exec env HERALD_API_KEYS="$KEY" TMPDIR="$work/serve" HERALD_RELAY=1 \
    "$herald" serve --simulator --host 127.0.0.1 --port 0 --database-url "$DATABASE_URL" \
    >"$work/serve.log" 2>&1) &
pids+=($!)
serve_pid=$!
# The CloudKit server-to-server key of docs/SIMULATOR.md's CloudKit examples (Key ID wake-key),
# made and given as that page makes and gives it, in the directory the blocks run in.
(cd "$work/run" && openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem 2>/dev/null)
(cd "$work/sim" && exec env TMPDIR="$work/sim" \
    "$herald" simulator --port 0 --control-port 0 --topic com.example.app --apply-silent-live-activity \
    --cloudkit-key "wake-key:$work/run/eckey.pem" >"$work/sim.log" 2>&1) &
pids+=($!)
sim_pid=$!

serve_port=$(await_line "$work/serve.log" 'herald listening address=' "$serve_pid" | sed -E 's/.*address=http:\/\/[^ ]*:([0-9]+).*/\1/')
sim_port=$(await_line "$work/sim.log" 'APNs URL' "$sim_pid" | sed -E 's/.*https:\/\/127\.0\.0\.1:([0-9]+).*/\1/')
ctl_port=$(await_line "$work/sim.log" 'Control API' "$sim_pid" | sed -E 's/.*http:\/\/127\.0\.0\.1:([0-9]+).*/\1/')
sim_files=$work/sim/herald-apns-simulator-$sim_port
echo "doctest: herald serve --simulator on :$serve_port, herald simulator on :$sim_port (control :$ctl_port)"

# Splits the Markdown files into segments. Each output record: kind, file, line, then the text.
# kind is `run` (commands), `expect` (an expectation for the commands before it) or `error`.
extract() {
    awk '
    function flush_cmd() { if (cmd != "") { printf "run\t%s\t%d\t%s\t%s\036", FILENAME, cmdline, lang, cmd; cmd = "" } }
    function flush_expect() { if (ex != "") { printf "expect\t%s\t%d\t-\t%s\036", FILENAME, expline, ex; ex = "" } }
    FNR == 1 { mark = ""; infence = 0; prev = "" }
    infence && $0 ~ "^" fence "[ \t]*$" { infence = 0; flush_cmd(); flush_expect(); prev = ""; next }
    infence {
        if (checkfirst && $0 !~ /^[ \t]*$/) {
            checkfirst = 0
            if ($0 ~ /^[ \t]*(\$ |curl |herald [a-z-]|make [a-z]|export |sudo |cd |python3 |[A-Z_]+=)/) printf "error\t%s\t%d\t-\tthe unlabelled block holds commands: label it sh and mark it <!-- doctest --> or <!-- doctest: not run, REASON -->\036", FILENAME, fenceline
        }
        if (!run) next
        if ($0 ~ /^# → /) {
            line = substr($0, length("# → ") + 1)
            if (ex == "") { expline = FNR; ex = line } else ex = ex "\n" line
            next
        }
        if (ex != "") { flush_cmd(); flush_expect() }
        if (cmd == "") { cmdline = FNR; cmd = $0 } else cmd = cmd "\n" $0
        next
    }
    /^(```+|~~~+)/ {
        match($0, /^(```+|~~~+)/)
        fence = substr($0, 1, RLENGTH)
        info = substr($0, RLENGTH + 1)
        gsub(/^[ \t]+|[ \t]+$/, "", info)
        split(info, words, /[ \t]+/)
        lang = words[1]
        infence = 1; run = 0; cmd = ""; ex = ""; checkfirst = 0
        if (prev ~ /^<!-- doctest: background, until .+ -->$/) {
            run = 1
            until = prev
            sub(/^<!-- doctest: background, until /, "", until)
            sub(/ -->$/, "", until)
            if (lang !~ /^(sh|bash|shell)$/) printf "error\t%s\t%d\t-\tonly sh, bash and shell blocks can run in the background, not %s\036", FILENAME, FNR, (lang == "" ? "an unlabelled one" : lang)
            lang = "background:" until
        }
        else if (prev ~ /^<!-- doctest -->$/) {
            run = 1
            if (lang !~ /^(sh|bash|shell|python)$/) printf "error\t%s\t%d\t-\tonly sh, bash, shell and python blocks can run, not %s\036", FILENAME, FNR, (lang == "" ? "an unlabelled one" : lang)
        }
        else if (prev ~ /^<!-- doctest: not run, [^ ].*-->$/) run = 0
        else if (prev ~ /^<!-- doctest/) printf "error\t%s\t%d\t-\tunknown doctest marking (use <!-- doctest --> or <!-- doctest: not run, REASON -->): %s\036", FILENAME, FNR, prev
        else if (lang == "") { checkfirst = 1; fenceline = FNR }
        else if (lang != "" && lang != "text" && lang != "json") printf "error\t%s\t%d\t-\tthe %s block has no doctest marking: put <!-- doctest --> or <!-- doctest: not run, REASON --> on the line before it\036", FILENAME, FNR, (lang == "" ? "unlabelled" : lang)
        next
    }
    { if ($0 !~ /^[ \t]*$/) prev = $0 }
    ' "$@"
}

files=(README.md docs/*.md)
failures=0
ran=0
fail() {
    failures=$((failures + 1))
    printf '\nFAIL %s:%s\n' "$1" "$2" >&2
    printf '%s\n' "$3" >&2
}

# The expectation as a bash pattern: `…` matches anything, every other character itself.
glob() { printf '%s' "$1" | sed -e 's/[][\\*?()|!@+]/\\&/g' -e 's/…/*/g'; }

# Normalises output for comparison: CR removed, runs of white space to one space, trimmed.
normalise() { tr -d '\r' | tr -s ' \t\n' '   ' | sed -E 's/^ //; s/ $//'; }

# Links stay inside the repository: a relative link must name a file or folder of this checkout,
# and no text may point into folders a clone does not have.
for file in "${files[@]}"; do
    while IFS=: read -r line target; do
        target=${target%%#*}
        [ -n "$target" ] || continue
        case $target in http://* | https://* | mailto:*) continue ;; esac
        resolved=$(realpath -m "$(dirname "$file")/$target")
        if [ ! -e "$resolved" ] || [[ $resolved != "$root"/* ]]; then
            fail "$file" "$line" "the link $target names nothing in this repository"
        fi
    done < <(grep -n -o -E '\]\([^) ]+\)|^\[[^]]+\]: *[^ ]+' "$file" | sed -E 's/^([0-9]+):(\]\(|\[[^]]+\]: *)/\1:/; s/\)$//')
    while IFS=: read -r line _; do
        fail "$file" "$line" "a reference outside the repository (../shared/, APNS.md §…): say it here, or link to the source"
    done < <(grep -n -E '\.\./shared/|APNS\.md §' "$file" || true)
done

# The examples' addresses, replaced by those of the servers started above.
servers() {
    local text=$1
    text=${text//localhost:3000/localhost:$serve_port}
    text=${text//127.0.0.1:8443/127.0.0.1:$sim_port}
    text=${text//127.0.0.1:8444/127.0.0.1:$ctl_port}
    text=${text//\/tmp\/herald-apns-simulator-8443/$sim_files}
    printf '%s\n' "$text"
}

for file in "${files[@]}"; do
    segments=()
    while IFS= read -r -d $'\036' record; do segments+=("$record"); done < <(extract "$file")
    [ ${#segments[@]} -eq 0 ] && continue
    out=$work/out/$file
    mkdir -p "$out"
    script=$out/script.sh
    {
        echo 'set -E -o pipefail'
        echo "export PATH='$(dirname "$herald")':\"\$PATH\""
        echo "cd '$work/run'"
        # Records the HTTP status of every request curl makes; `-` when the example sets its own -w.
        cat <<'WRAPPER'
curl() {
    local arg
    for arg in "$@"; do
        case $arg in -w | -w* | --write-out | --write-out=*)
            echo - >>"$DOCTEST_STATUS"
            command curl "$@"
            return
            ;;
        esac
    done
    command curl -w "%{stderr}%{http_code}\n" "$@" 2>>"$DOCTEST_STATUS"
}
WRAPPER
        echo 'trap '"'"'echo "line $LINENO: \"$BASH_COMMAND\" exited $?" >>"$DOCTEST_ERRORS"'"'"' ERR'
    } >"$script"
    n=0
    for record in "${segments[@]}"; do
        IFS=$'\t' read -r kind _ line lang _ <<<"${record%%$'\n'*}"
        text=${record#*$'\t'*$'\t'*$'\t'*$'\t'}
        case $kind in
        error)
            fail "$file" "$line" "$text"
            ;;
        run)
            n=$((n + 1))
            text=$(servers "$text")
            printf '%s\n' "$text" >"$out/$n.cmd"
            if [ "$lang" = python ]; then text=$(printf "python3 - <<'DOCTEST_PYTHON'\n%s\nDOCTEST_PYTHON" "$text"); fi
            if [[ $lang == background:* ]]; then
                # The block as a server: in its own session and directory until its line shows.
                printf '%s\n' "$text" >"$out/$n.background.sh"
                printf '%s\n' "${lang#background:}" >"$out/$n.until"
                text="bg=\$(mktemp -d '$work/background.XXXXXX')
(cd \"\$bg\" && TMPDIR=\"\$bg\" exec setsid bash '$out/$n.background.sh') >\"\$bg/log\" 2>&1 &
bg_pid=\$!
bg_seen=
for _ in \$(seq 600); do
    if grep -qEf '$out/$n.until' \"\$bg/log\"; then bg_seen=1; break; fi
    kill -0 \"\$bg_pid\" 2>/dev/null || break
    sleep 0.1
done
kill -TERM -- -\"\$bg_pid\" 2>/dev/null || true
wait \"\$bg_pid\" 2>/dev/null || true
cat \"\$bg/log\"
[ -n \"\$bg_seen\" ]"
            fi
            printf '%s\n' "$line" >"$out/$n.line"
            {
                echo "DOCTEST_STATUS='$out/$n.status' DOCTEST_ERRORS='$out/$n.errors'"
                echo ": >\"\$DOCTEST_STATUS\"; : >\"\$DOCTEST_ERRORS\""
                echo "{"
                printf '%s\n' "$text"
                echo "} >'$out/$n.out' 2>'$out/$n.err' </dev/null"
                echo "echo \$? >'$out/$n.rc'"
                echo "echo done >'$out/$n.done'"
            } >>"$script"
            ;;
        expect)
            servers "$text" >"$out/$n.expect"
            printf '%s\n' "$line" >"$out/$n.expectline"
            ;;
        esac
    done
    started=$SECONDS
    timeout 300 bash "$script" >"$out/script.out" 2>&1 || true
    echo "doctest: $file: $n examples in $((SECONDS - started)) s"
    for i in $(seq "$n"); do
        ran=$((ran + 1))
        line=$(cat "$out/$i.line")
        command=$(cat "$out/$i.cmd")
        if [ ! -e "$out/$i.done" ]; then
            fail "$file" "$line" "  command: $command
  did not finish (the file's examples stopped after 300 s or on an error): $(tail -5 "$out/script.out")"
            continue
        fi
        expected=
        [ -e "$out/$i.expect" ] && expected=$(normalise <"$out/$i.expect")
        # Each request's status is 1xx–3xx, but for the last one when the expectation names it.
        statuses=()
        mapfile -t statuses < <(grep -E '^([0-9]{3}|-)$' "$out/$i.status" || true)
        checked=${#statuses[@]}
        if [[ $expected =~ ^[0-9]{3}( |$) ]] && [ "$checked" -gt 0 ] && [ "${statuses[checked - 1]}" != - ]; then
            checked=$((checked - 1))
        fi
        unexpected=
        for status in "${statuses[@]:0:checked}"; do
            [[ $status =~ ^[123][0-9]{2}$ || $status == - ]] || unexpected+=" $status"
        done
        if [ -n "$unexpected" ]; then
            fail "$file" "$line" "  command: $command
  HTTP status:$unexpected (a request must answer 1xx-3xx; declare an error status with \`# → 4xx …\`)
  stdout: $(head -c 2000 "$out/$i.out")"
            continue
        fi
        if [[ $expected =~ ^\[exit\ ([0-9]+)\]\ ?(.*)$ ]]; then
            # A command expected to fail: its exit status, and what it wrote to either stream.
            want=${BASH_REMATCH[1]}
            expected=${BASH_REMATCH[2]}
            rc=$(cat "$out/$i.rc")
            actual=$(cat "$out/$i.out" "$out/$i.err" | normalise)
            pattern=$(glob "$expected")
            # shellcheck disable=SC2053 # the right-hand side is a glob on purpose
            if [ "$rc" != "$want" ] || [[ $actual != $pattern ]]; then
                fail "$file" "$(cat "$out/$i.expectline")" "  command: $command
  expected: exit $want, $expected
  actual:   exit $rc, $actual"
            fi
            continue
        fi
        if [ -s "$out/$i.errors" ]; then
            fail "$file" "$line" "  command: $command
  failed: $(cat "$out/$i.errors")
  stdout: $(cat "$out/$i.out")
  stderr: $(cat "$out/$i.err")"
            continue
        fi
        [ -e "$out/$i.expect" ] || continue
        actual=$(normalise <"$out/$i.out")
        status=$(grep -E '^([0-9]{3}|-)$' "$out/$i.status" | tail -1 || true)
        [ -n "$status" ] && [ "$status" != - ] && actual="$status $actual"
        actual=${actual% }
        pattern=$(glob "$expected")
        # shellcheck disable=SC2053 # the right-hand side is a glob on purpose
        if [[ $actual != $pattern ]]; then
            fail "$file" "$(cat "$out/$i.expectline")" "  command: $command
  expected: $expected
  actual:   $actual
  stderr:   $(head -c 2000 "$out/$i.err")"
        fi
    done
done

if [ "$failures" -gt 0 ]; then
    echo >&2
    echo "doctest: $failures failure(s) in ${files[*]} ($ran examples run)" >&2
    exit 1
fi
echo "doctest: $ran examples in ${#files[@]} files ran as written"
