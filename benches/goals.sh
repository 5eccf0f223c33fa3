#!/usr/bin/env bash
# Goals as they grow, whole processes (issue 27): `goal create` of 100 and 1 000 work items;
# one `goal show` and one `goal report` on a 1 000-item goal after about 10 000 events
# against the same commands on a fresh goal of the same size; `goal run` of 100 and 1 000
# no-op items (a runner that answers `succeeded` at once, max_parallel 8) against a plain
# script spawning the same runner as many times with the same parallelism (xargs -P 8: the
# limit); and `goal serve` of 100 goals × 20 items with one and with two serve processes
# (directory store; PostgreSQL too when LWIRC_TEST_POSTGRES names one). One run each (the
# ~10 000-event goal is itself a `goal run` of about 5 000 attempts). Prints a Markdown
# table.
#
#   benches/goals.sh                  # release build
#   PROFILE=dev benches/goals.sh
#   LWIRC_TEST_POSTGRES=postgres://… benches/goals.sh
set -euo pipefail
cd "$(dirname "$0")/.."
. benches/lib.sh
root=$(pwd)

build_lwirc
work=$(mktemp -d)
serving=()
cleanup() {
    for pid in "${serving[@]}"; do kill "$pid" 2> /dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
cd "$work"
export LWIR_GOALS="$work/goals"

"$lwirc" register "$root/examples/issue-triage/draft.json" -d "$root/examples/issue-triage/workflow.json" > /dev/null 2>&1
"$lwirc" register "$root/examples/goals/triage-lite.json" -d "$root/examples/issue-triage/workflow.json" > /dev/null 2>&1

# The runner: reads its request, answers `succeeded`; with FAIL_UNTIL=n it fails attempts
# before the n-th, and the root's runner never answers (its pid in gate.pid).
cat > runner.sh <<'SH'
#!/bin/sh
cat > /dev/null
if [ "${FAIL_UNTIL:-0}" -gt 0 ] && [ "${LWIRC_WORK_KEY:-}" = all ]; then
    echo $$ > "$(dirname "$0")/gate.pid"
    exec sleep 3600
fi
if [ "${LWIRC_ATTEMPT:-1}" -lt "${FAIL_UNTIL:-0}" ]; then
    echo '{"kind":"failed","error":"not yet"}'
else
    echo '{"kind":"succeeded","output":{"summary":"done"}}'
fi
SH
chmod +x runner.sh
runner="$work/runner.sh"
echo '{"summary":"done"}' > output.json

# goal_file NAME N [MAX_ATTEMPTS] [GATE]: a goal of N work items — N-1 independent
# `triage-lite` items (N-2 and a `gate` with GATE) under a `triage` root — written to NAME.json.
goal_file() {
    python3 - "$@" <<'PY'
import json, os, sys
name, n = sys.argv[1], int(sys.argv[2])
attempts = int(sys.argv[3]) if len(sys.argv) > 3 else 1
gate = len(sys.argv) > 4
base = json.load(open(os.environ["ROOT"] + "/examples/goals/goal.json"))
keys = [f"k{i}" for i in range(n - 1 - (1 if gate else 0))] + (["gate"] if gate else [])
base["goal"] = name
base["templates"]["triage-lite"]["max_attempts"] = attempts
base["templates"]["triage"]["max_attempts"] = 1
base["work"] = [{"key": k, "template": "triage-lite", "input": {"repo": "acme/widgets"}} for k in keys]
base["work"].append({"key": "all", "template": "triage", "input": {"repo": "acme/widgets"}, "after": keys})
base["root"] = "all"
base["limits"] = {"max_total_attempts": 10000, "max_parallel": 8, "max_wall_time_s": 86400}
json.dump(base, open(name + ".json", "w"))
PY
}
export ROOT="$root"

# seconds CMD...: the wall time of one run of CMD, in seconds (it must succeed, or with
# ANY_EXIT=1 end with any status); its standard output is kept in $work/last.out.
seconds() {
    local start end
    start=$EPOCHREALTIME
    "$@" > "$work/last.out" 2> "$work/last.err" || [ "${ANY_EXIT:-0}" = 1 ] || { cat "$work/last.err" >&2; exit 1; }
    end=$EPOCHREALTIME
    echo "$end - $start" | bc -l
}
ms() { printf '%.1f ms' "$(echo "$1 * 1000" | bc -l)"; }
s() { printf '%.2f s' "$1"; }
ratio() { printf '%.2f×' "$(echo "$1 / $2" | bc -l)"; }
events() { wc -l < "$LWIR_GOALS/$1/events.jsonl" | tr -d ' '; }

echo "| what | measured | compared with | ratio |"
echo "|---|---:|---|---:|"

# goal create.
goal_file create-100 100
goal_file create-1000 1000
c100=$(seconds "$lwirc" goal create create-100.json)
c1000=$(seconds "$lwirc" goal create create-1000.json)
echo "| \`goal create\`, 1 000 items | $(s "$c1000") | 100 items: $(s "$c100") | $(ratio "$c1000" "$c100") |"

# A fresh 1 000-item goal, and one after ~10 000 events: a `goal run` whose 999 items each
# failed 4 times and succeeded the 5th, killed once the root was dispatched. The report
# timed records one attempt's end on each: of `k0` on the fresh goal, of the root on the
# other.
goal_file fresh 1000 5
goal_file aged 1000 5
fresh=$("$lwirc" goal create fresh.json)
aged=$("$lwirc" goal create aged.json)
start=$EPOCHREALTIME
FAIL_UNTIL=5 "$lwirc" goal run "$aged" --runner "$runner" --quiet > /dev/null 2>&1 &
driving=$!
serving+=("$driving")
until [ -f gate.pid ]; do
    sleep 0.05
done
end=$EPOCHREALTIME
kill -KILL "$driving"
wait "$driving" 2> /dev/null || true
kill "$(cat gate.pid)" 2> /dev/null || true
aged_run=$(echo "$end - $start" | bc -l)
n_aged=$(events "$aged")
n_fresh=$(events "$fresh")
show_fresh=$(seconds "$lwirc" goal show "$fresh" --format json)
show_aged=$(seconds "$lwirc" goal show "$aged" --format json)
report_fresh=$(seconds "$lwirc" goal report "$fresh" k0 succeeded --output output.json)
report_aged=$(seconds "$lwirc" goal report "$aged" all succeeded --output output.json)
echo "| \`goal show --format json\`, 1 000 items, $n_aged events | $(ms "$show_aged") | fresh ($n_fresh events): $(ms "$show_fresh") | $(ratio "$show_aged" "$show_fresh") |"
echo "| \`goal report … succeeded\`, 1 000 items, $n_aged events | $(ms "$report_aged") | fresh: $(ms "$report_fresh") | $(ratio "$report_aged" "$report_fresh") |"
echo "| (the $n_aged-event history: \`goal run\` of $(( (n_aged - n_fresh) / 2 )) attempts, 4 of 5 failing) | $(s "$aged_run") | | |"

# goal run against the plain script.
for n in 100 1000; do
    goal_file "run-$n" "$n"
    id=$("$lwirc" goal create "run-$n.json")
    run=$(seconds "$lwirc" goal run "$id" --runner "$runner" --quiet --format json)
    grep -q '"status": *"succeeded"' "$work/last.out" || { cat "$work/last.out" >&2; exit 1; }
    # (xargs gives each runner /dev/null for its input.)
    plain=$(seconds sh -c "seq $((n + 1)) | xargs -P 8 -I{} $runner")
    eval "run_$n=$run; plain_$n=$plain"
    echo "| \`goal run\`, $n no-op items (and the root), max_parallel 8 | $(s "$run") | plain script, $((n + 1)) spawns, 8 at once: $(s "$plain") | $(ratio "$run" "$plain") |"
done
echo "| \`goal run\` growth, 100 → 1 000 items | $(ratio "$run_1000" "$run_100") | plain script: $(ratio "$plain_1000" "$plain_100") | |"

# succeeded STORE PREFIX: how many goals whose id starts with PREFIX have succeeded.
succeeded() {
    if [ -d "$1" ]; then
        python3 - "$1" "$2" <<'PY'
import os, sys
store, prefix = sys.argv[1], sys.argv[2]
done = 0
for goal in os.listdir(store):
    if goal.startswith(prefix):
        with open(os.path.join(store, goal, "events.jsonl"), "rb") as log:
            # 19 items and the root: 20 successes.
            done += log.read().count(b'"event":"work.succeeded"') == 20
print(done)
PY
    else
        "$lwirc" goal list --format json 2> /dev/null | python3 -c '
import json, sys
print(sum(1 for g in json.load(sys.stdin) if g["goal"].startswith(sys.argv[1]) and g["status"] == "succeeded"))' "$2"
    fi
}

# goal serve: 100 goals × 20 items, until every root succeeded.
run_tag=$(date +%s)
serve_bench() {
    local store=$1 label=$2 procs=$3
    # The run's own goals: a database another run filled before holds goals of the same
    # names, already done.
    local name="serve-$label-$procs-$run_tag"
    export LWIR_GOALS=$store
    for g in $(seq 100); do
        goal_file "$name-$g" 20
        "$lwirc" goal create "$name-$g.json" > /dev/null
    done
    local start end
    start=$EPOCHREALTIME
    serving=()
    for _ in $(seq "$procs"); do
        "$lwirc" goal serve --runner "$runner" --interval 0.05 --quiet > /dev/null 2>&1 &
        serving+=($!)
    done
    # Done when every root succeeded: counted in the logs (the directory store), else by
    # `goal list`.
    until [ "$(succeeded "$store" "$name-")" = 100 ]; do
        sleep 0.1
    done
    end=$EPOCHREALTIME
    for pid in "${serving[@]}"; do kill "$pid" 2> /dev/null || true; done
    for pid in "${serving[@]}"; do wait "$pid" 2> /dev/null || true; done
    serving=()
    local t
    t=$(echo "$end - $start" | bc -l)
    echo "| \`goal serve\` ×$procs, 100 goals × 20 items, $label | $(s "$t") | $(printf '%.0f' "$(echo "2000 / $t" | bc -l)") items/s | |"
}
serve_bench "$work/serve-goals" directory 1
serve_bench "$work/serve-goals-2" directory 2
if [ -n "${LWIRC_TEST_POSTGRES:-}" ]; then
    serve_bench "$LWIRC_TEST_POSTGRES" postgres 1
    serve_bench "$LWIRC_TEST_POSTGRES" postgres 2
fi
