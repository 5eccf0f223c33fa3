#!/usr/bin/env bash
# Whole-process comparison: for generated drafts of 1 000, 10 000 and 100 000 steps, times
# `lwirc validate -d` and `lwirc hash` next to a plain serde_json parse of the same file and — when npm is
# there — `ajv validate` of the LWIR meta-schema alone (installed into a temporary directory),
# alternating the three in one run, RUNS times each (the fastest of them, or with
# STAT=median their median: a run's time here is what it needs plus what the machine took
# from it, and the fastest is the one it took least from). Prints a Markdown table with
# the ratios and the peak memory (`/usr/bin/time -v`, when present): of `validate`, also above
# the fixed cost of a run (the peak of validating a one-step draft), and of `hash`.
#
# Two shapes of draft, one table each: `plain` (the benchmarks' drafts, whose interpolations
# are mostly plain paths such as `${ input.repo }`) and `real` (expressions like the ones
# planners write: `map`/`filter`/`exists` macros with lambdas, `size()`, ternaries,
# arithmetic, string methods, `has()`, several interpolations per template, a `map` and
# `reduce` every few steps), each validated against its own definition with 0 findings.
#
#   benches/compare.sh            # 5 runs each, both shapes, the fastest
#   RUNS=3 STAT=median STEPS="1000 10000" SHAPES=real benches/compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# bash's clock ($EPOCHREALTIME) for times, with the C locale's decimal point.
LC_NUMERIC=C

runs=${RUNS:-5}
stat=${STAT:-min}
case $stat in
    min | median) ;;
    *) echo "STAT is min or median, not $stat" >&2; exit 2 ;;
esac
steps_list=${STEPS:-"1000 10000 100000"}
shapes=${SHAPES:-"plain real"}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cargo build --release --locked -q --bin lwirc --example generate
target=${CARGO_TARGET_DIR:-target}
lwirc=$target/release/lwirc
generate=$target/release/examples/generate

ajv=""
if command -v npm > /dev/null; then
    if (cd "$work" && npm install --silent --no-audit --no-fund ajv-cli@5 ajv-formats@2 > /dev/null 2>&1); then
        ajv="$work/node_modules/.bin/ajv"
    else
        echo "(npm could not install ajv-cli: the ajv column is left out)" >&2
    fi
else
    echo "(npm is not installed: the ajv column is left out)" >&2
fi

# seconds CMD...: the wall time of one run of CMD, in seconds.
seconds() {
    local start end
    start=$EPOCHREALTIME
    "$@" > /dev/null 2>&1 || true
    end=$EPOCHREALTIME
    echo "$end - $start" | bc -l
}

# peak CMD...: the peak resident set of one run, in MiB ("-" without /usr/bin/time).
peak() {
    if [ -x /usr/bin/time ]; then
        /usr/bin/time -v "$@" 2>&1 > /dev/null | awk '/Maximum resident set size/ {printf "%.1f", $6 / 1024}'
    else
        echo "-"
    fi
}

median() { sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
fastest() { sort -g | head -n 1; }
# pick < FILE: the chosen statistic of the times in FILE.
pick() { if [ "$stat" = min ]; then fastest; else median; fi; }

for shape in $shapes; do
    case $shape in
        plain) prefix="" ;;
        real) prefix="real-" ;;
        *) echo "unknown shape $shape (plain or real)" >&2; exit 2 ;;
    esac
    echo
    echo "Drafts of shape \`$shape\` (times: the $stat of $runs runs):"
    echo
    printf '| steps | size | serde_json parse | `lwirc validate -d` | ratio | `lwirc hash` | ratio |'
    [ -n "$ajv" ] && printf ' `ajv validate` (meta-schema only) | lwirc ÷ ajv |'
    printf ' validate peak | ÷ size | above a 1-step run ÷ size | hash peak ÷ size |\n'
    printf '|---:|---:|---:|---:|---:|---:|---:|'
    [ -n "$ajv" ] && printf -- '---:|---:|'
    printf -- '---:|---:|---:|---:|\n'
    # The fixed cost of a run: the binary, the compiled meta-schema, the threads.
    "$generate" "${prefix}draft" 1 > "$work/draft-1.json"
    "$generate" "${prefix}definition" 1 > "$work/workflow-1.json"
    base=$(peak "$lwirc" validate "$work/draft-1.json" -d "$work/workflow-1.json" --format json)
    for steps in $steps_list; do
        draft="$work/draft-$shape-$steps.json"
        definition="$work/workflow-$shape-$steps.json"
        "$generate" "${prefix}draft" "$steps" > "$draft"
        "$generate" "${prefix}definition" "$steps" > "$definition"
        size=$(stat -c %s "$draft")
        : > "$work/serde" ; : > "$work/lwirc" ; : > "$work/hash" ; : > "$work/ajv"
        for _ in $(seq "$runs"); do
            seconds "$generate" parse "$draft" >> "$work/serde"
            seconds "$lwirc" validate "$draft" -d "$definition" --format json >> "$work/lwirc"
            seconds "$lwirc" hash "$draft" >> "$work/hash"
            if [ -n "$ajv" ]; then
                seconds "$ajv" validate --spec=draft2020 -c ajv-formats --strict=false \
                    -s crates/lwir-spec/schema/lwir-1.schema.json -d "$draft" >> "$work/ajv"
            fi
        done
        s=$(pick < "$work/serde")
        l=$(pick < "$work/lwirc")
        h=$(pick < "$work/hash")
        mib=$(echo "$size / 1048576" | bc -l)
        p=$(peak "$lwirc" validate "$draft" -d "$definition" --format json)
        hp=$(peak "$lwirc" hash "$draft")
        printf '| %s | %.1f MiB | %.3f s | %.3f s | %.1f× | %.3f s | %.2f× |' "$steps" "$mib" "$s" "$l" \
            "$(echo "$l / $s" | bc -l)" "$h" "$(echo "$h / $s" | bc -l)"
        if [ -n "$ajv" ]; then
            a=$(pick < "$work/ajv")
            printf ' %.3f s | %.2f |' "$a" "$(echo "$l / $a" | bc -l)"
        fi
        if [ "$p" = "-" ]; then
            printf ' - | - | - | - |\n'
        else
            printf ' %s MiB | %.1f× | %.1f× | %.1f× |\n' "$p" "$(echo "$p / $mib" | bc -l)" \
                "$(echo "($p - $base) / $mib" | bc -l)" "$(echo "$hp / $mib" | bc -l)"
        fi
    done
    if [ "$base" != "-" ]; then echo "(a one-step draft: validate peak $base MiB)"; fi
done
