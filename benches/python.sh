#!/usr/bin/env bash
# `lwirc.validate` from Python against the same validation by the Rust command, and beside
# the `jsonschema` Python package checking the LWIR meta-schema alone (no expressions, no
# definition: a small part of what lwirc checks). For generated drafts with real
# expressions (`generate real-draft`) of 1 000 and 10 000 steps; each timed RUNS times,
# the minimum kept, in one run of the script:
#   - `lwirc validate -d … --format json`, the whole process (the Rust command);
#   - in Python, the files read, `lwirc.validate(draft, definition).to_json()` (what the
#     command does and prints);
#   - in Python, the draft read, `json.loads` and `jsonschema`'s Draft 2020-12 validator of
#     crates/lwir-spec/schema/lwir-1.schema.json.
# Prints a Markdown table.
#
#   VENV=v benches/python.sh      # v: a venv with the package (a release build) and jsonschema
#   python3 -m venv v && v/bin/pip install ./python jsonschema==4.23.0
set -euo pipefail
cd "$(dirname "$0")/.."
venv=${VENV:?set VENV to a virtual environment with lwirc (pip install ./python) and jsonschema}
runs=${RUNS:-5}
steps_list=${STEPS:-"1000 10000"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --locked -q --bin lwirc --example generate
target=${CARGO_TARGET_DIR:-target}
lwirc=$(realpath "$target/release/lwirc")
generate=$target/release/examples/generate

echo "| steps | size | \`lwirc validate\` (Rust, whole process) | \`lwirc.validate\` (Python) | ÷ Rust | jsonschema (meta-schema only) | lwirc ÷ jsonschema |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
for n in $steps_list; do
    "$generate" real-draft "$n" > "$work/draft-$n.json"
    "$generate" real-definition "$n" > "$work/workflow-$n.json"
    "$venv/bin/python" - "$lwirc" "$work/draft-$n.json" "$work/workflow-$n.json" \
        crates/lwir-spec/schema/lwir-1.schema.json "$runs" "$n" <<'PY'
import json, os, subprocess, sys, time
import jsonschema
import lwirc

exe, draft, definition, meta, runs, n = sys.argv[1:7]
runs = int(runs)

def best(f):
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return min(times)

def rust():
    out = subprocess.run([exe, "validate", draft, "-d", definition, "--format", "json"],
                         stdout=subprocess.PIPE, check=False)
    assert out.returncode == 0, out.returncode

def python():
    with open(draft, "rb") as d, open(definition, "rb") as w:
        report = lwirc.validate(d.read(), w.read())
    report.to_json()
    assert report.ok

schema = json.load(open(meta))
validator = jsonschema.Draft202012Validator(schema)
def meta_only():
    with open(draft, "rb") as d:
        validator.validate(json.loads(d.read()))

r, p, j = best(rust), best(python), best(meta_only)
size = os.path.getsize(draft) / 2**20
print(f"| {int(n):,} | {size:.2f} MiB | {r:.3f} s | {p:.3f} s | {p / r:.2f}× | {j:.3f} s | {p / j:.2f}× |".replace(",", " "))
PY
done
