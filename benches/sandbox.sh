#!/usr/bin/env bash
# What a sandboxed call costs, as a user pays it: whole processes, start to end, the median of
# alternating runs. `true` and a Python `code.run` body, each run directly and through
# `lwirc test-code` (the one code runner `lwirc run` and the planner's `test_code` use: the
# sandbox's probe, itself a sandboxed `true`, then the body in the sandbox), and lwirc's own
# start (`lwirc --version`) to tell it apart. Prints a Markdown table.
#
#   benches/sandbox.sh                    # target/release/lwirc (cargo build --release first)
#   LWIRC=target/debug/lwirc RUNS=10 benches/sandbox.sh
#
# In-process numbers, without lwirc's start and the probe: `cargo bench -p lwir-sandbox`.
set -euo pipefail
cd "$(dirname "$0")/.."
LWIRC=${LWIRC:-target/release/lwirc}
RUNS=${RUNS:-20}
[ -x "$LWIRC" ] || { echo "no $LWIRC: cargo build --release -p lwirc (or set LWIRC)" >&2; exit 2; }
"$LWIRC" sandbox check >/dev/null || { echo "the sandbox does not run here: lwirc sandbox check" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
body='import json, sys
d = json.load(sys.stdin)
print(json.dumps({"total": sum(d["items"])}))'
python3 - "$work" "$body" <<'PY'
import json, sys
work, body = sys.argv[1], sys.argv[2]
out = {"type": "object", "properties": {"total": {"type": "integer"}}, "required": ["total"]}
draft = {"lwir": "1", "workflow": "bench", "steps": [
    {"id": "t", "kind": "code.run", "language": "bash", "body": "true; echo null", "output": {}},
    {"id": "p", "kind": "code.run", "language": "python", "body": body, "input": "${ input }", "output": out}],
    "output": "${ steps.p.output }"}
json.dump(draft, open(f"{work}/draft.json", "w"))
json.dump({"items": list(range(100))}, open(f"{work}/input.json", "w"))
PY
python3 - "$LWIRC" "$RUNS" "$work" "$body" <<'PY'
import statistics, subprocess, sys, time
lwirc, runs, work, body = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
draft, inp = f"{work}/draft.json", f"{work}/input.json"
cases = [
    ("`true`, direct", ["/usr/bin/true"], None),
    ("`lwirc --version` (lwirc's start)", [lwirc, "--version"], None),
    ("`true; echo null` body, `lwirc test-code` (probe + 1 sandboxed call)", [lwirc, "test-code", "t", draft], None),
    ("Python body, direct (`python3 -c BODY < input`)", ["/usr/bin/python3", "-c", body], inp),
    ("Python body, `lwirc test-code` (probe + 1 sandboxed call)", [lwirc, "test-code", "p", draft, "--input", inp], None),
]
times = {name: [] for name, _, _ in cases}
for _ in range(runs):
    for name, argv, stdin in cases:
        f = open(stdin, "rb") if stdin else subprocess.DEVNULL
        start = time.perf_counter()
        done = subprocess.run(argv, stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times[name].append(time.perf_counter() - start)
        if done.returncode != 0:
            sys.exit(f"{argv} exited {done.returncode}")
median = {n: statistics.median(t) for n, t in times.items()}
print(f"| command ({runs} runs each) | median |")
print("|---|---:|")
for name, _, _ in cases:
    print(f"| {name} | {median[name] * 1000:.1f} ms |")
start = median["`lwirc --version` (lwirc's start)"]
per_call = (median["`true; echo null` body, `lwirc test-code` (probe + 1 sandboxed call)"] - start) / 2
py = median["Python body, `lwirc test-code` (probe + 1 sandboxed call)"] - start - per_call
print()
print(f"One sandboxed `true`, lwirc's start taken out and the probe counted as one: {per_call * 1000:.1f} ms "
      f"({per_call / median['`true`, direct']:.0f}× `true` run directly); the Python body in the sandbox: "
      f"{py * 1000:.1f} ms ({py / median['Python body, direct (`python3 -c BODY < input`)']:.1f}× run directly).")
PY
