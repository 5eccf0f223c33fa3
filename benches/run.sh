#!/usr/bin/env bash
# `lwirc run` against a plain client, over the same MCP server: a workflow of one `map` of N
# calls to server-everything's `echo` (max_parallel 16, every step durable in the run's
# log), and `benches/plain_mcp_client.py` making the same N calls over the same server with
# the same parallelism (raw JSON-RPC, nothing recorded). Both are timed as whole processes
# (the server's start included), alternating, RUNS times each (median). Then the 10 000-call
# run is resumed (nothing left to do: the log read and checked) and replayed; then it is
# killed halfway and resumed, and run with a server that dies halfway and retried. Prints
# Markdown tables, with the fsyncs per step the run reported.
#
#   . .ci/engines.sh            # or LWIRC_TEST_MCP_EVERYTHING=…/dist/index.js
#   benches/run.sh              # N in 1000 10000, 3 runs each
#   RUNS=5 CALLS="1000" PROFILE=dev benches/run.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh

runs=${RUNS:-3}
calls_list=${CALLS:-"1000 10000"}
everything=${LWIRC_TEST_MCP_EVERYTHING:?set it to server-everything\'s dist/index.js (. .ci/engines.sh)}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

build_lwirc
plain=$(realpath benches/plain_mcp_client.py)

cd "$work"
"$lwirc" tools import --mcp "node $everything stdio" --prefix util. > tools.json 2> /dev/null
python3 - <<'PY'
import json
tools = json.load(open("tools.json"))["tools"]
json.dump({"name": "bench", "output": {}, "models": {},
           "input": {"type": "object", "properties": {"items": {"type": "array", "items": {"type": "string"}}},
                     "required": ["items"]},
           "tools": {"util.echo": tools["util.echo"]},
           "limits": {"max_steps": 10, "max_parallel": 64, "max_loop_iterations": 10}},
          open("workflow.json", "w"))
json.dump({"lwir": "1", "workflow": "bench",
           "steps": [{"id": "each", "kind": "map", "over": "${ input.items }", "as": "m",
                      "max_parallel": 16,
                      "steps": [{"id": "echo", "kind": "tool.call", "tool": "util.echo",
                                 "args": {"message": "${ m }"}}],
                      "result": "${ steps.echo.output }"}],
           "output": {"n": "${ size(steps.each.output) }"}},
          open("draft.json", "w"))
PY
cat > bindings.json <<JSON
{"bindings": "lwir.bindings/1",
 "servers": {"everything": {"command": ["node", "$everything", "stdio"]}},
 "tools": {"util.echo": {"server": "everything", "name": "echo"}}}
JSON
version=$("$lwirc" register draft.json -d workflow.json --registry registry 2> /dev/null)

# seconds CMD...: the wall time of one run of CMD, in seconds (it must succeed).
seconds() {
    local start end
    start=$EPOCHREALTIME
    "$@" > /dev/null 2> "$work/last.err" || { cat "$work/last.err" >&2; exit 1; }
    end=$EPOCHREALTIME
    echo "$end - $start" | bc -l
}
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "| calls | plain client | \`lwirc run\` | ratio | fsyncs per step |"
echo "|---:|---:|---:|---:|---:|"
declare -A lwirc_median
for n in $calls_list; do
    python3 -c "import json,sys; json.dump({'items': [f'item {i}' for i in range($n)]}, open('input-$n.json','w'))"
    : > "plain-$n" ; : > "lwirc-$n"
    for _ in $(seq "$runs"); do
        seconds python3 "$plain" "$n" 16 echo -- node "$everything" stdio >> "plain-$n"
        rm -rf runs
        seconds "$lwirc" run "$version" --input "input-$n.json" --bindings bindings.json --max-parallel 16 \
            --registry registry --runs runs >> "lwirc-$n"
    done
    p=$(median < "plain-$n")
    l=$(median < "lwirc-$n")
    lwirc_median[$n]=$l
    fsyncs=$(sed -n 's/.*, \([0-9.]*\) fsyncs per step.*/\1/p' "$work/last.err" | tail -1)
    printf '| %s | %.3f s | %.3f s | %.2f× | %s |\n' "$n" "$p" "$l" "$(echo "$l / $p" | bc -l)" "$fsyncs"
done
set -- $calls_list
if [ $# -ge 2 ]; then
    first=$1; last=${!#}
    printf '\ngrowth of `lwirc run` from %s to %s calls: %.2f×\n' "$first" "$last" \
        "$(echo "${lwirc_median[$last]} / ${lwirc_median[$first]}" | bc -l)"
fi

# The last run of the largest N is in ./runs: resume it (it succeeded: its log is read and
# its output printed again) and replay it (every decision rebuilt, nothing called).
run=$(ls runs | head -1)
printf '\n| on the %s-call run | time |\n|---|---:|\n' "${!#}"
printf '| `runs resume` (ended: log read, chain checked) | %.3f s |\n' \
    "$(seconds "$lwirc" runs resume "$run" --registry registry --runs runs)"
printf '| `runs replay` | %.3f s |\n' \
    "$(seconds "$lwirc" runs replay "$run" --registry registry --runs runs)"

# A crash: the same run killed with SIGKILL halfway (by its log: half the calls answered),
# then `runs resume`, which replays what the log holds and makes the remaining calls.
n=${!#}
rm -rf runs
"$lwirc" run "$version" --input "input-$n.json" --bindings bindings.json --max-parallel 16 \
    --registry registry --runs runs > /dev/null 2> "$work/crash.err" &
pid=$!
answered() { cat runs/*/events.jsonl 2> /dev/null | grep '"tool.responded"' | grep -vc '"error"' || true; }
while [ "$(answered)" -lt $((n / 2)) ] && kill -0 "$pid" 2> /dev/null; do sleep 0.02; done
kill -9 "$pid" 2> /dev/null || true
wait "$pid" 2> /dev/null || true
run=$(ls runs | head -1)
done_before=$(answered)
printf '| `runs resume` after `kill -9` at %s of %s calls (the rest made) | %.3f s |\n' \
    "$done_before" "$n" "$(seconds "$lwirc" runs resume "$run" --registry registry --runs runs)"

# A failure: the server killed halfway through the run (every call after that fails its
# item, and the map the run), then `runs retry` with working bindings: the items that
# succeeded keep their results, the rest are called.
rm -rf runs
sed 's/"command": \["node"/"command": ["timeout", "-s", "KILL", "'"$(echo "${lwirc_median[$n]} / 2" | bc -l)"'", "node"/' \
    bindings.json > dying.json
"$lwirc" run "$version" --input "input-$n.json" --bindings dying.json --max-parallel 16 \
    --registry registry --runs runs > /dev/null 2> "$work/fail.err" && {
    echo "the run with a dying server succeeded: the server outlived it" >&2
    exit 1
}
run=$(ls runs | head -1)
kept=$(answered)
printf '| `runs retry` of it, %s of %s calls answered before the server died (the rest made) | %.3f s |\n' \
    "$kept" "$n" "$(seconds "$lwirc" runs retry "$run" --bindings bindings.json --registry registry --runs runs)"
