#!/bin/sh
# EXAMPLE runner for lwirc (protocol lwir-runner/1, crates/lwir-spec/README.md section 10). It runs
# nothing: it replays recorded outcomes, for tests and demos:
#
#   lwirc goal run GOAL --runner 'examples/runners/scripted.sh examples/goals/runner'
#
# For attempt N of the work item with key KEY (LWIRC_WORK_KEY and LWIRC_ATTEMPT, set by
# lwirc) it prints DIR/KEY-N.json verbatim as the answer, else DIR/KEY.json; with neither it
# answers `failed`. The request on standard input is read and discarded.
#
# Usage: scripted.sh DIR      (run by lwirc; exit 2 on a usage error)
set -eu

usage() {
    printf 'scripted.sh: %s\n' "$1" >&2
    printf 'usage: scripted.sh DIR   (an example runner, run by lwirc goal run --runner)\n' >&2
    exit 2
}

[ "$#" -eq 1 ] || usage "expected one argument, the directory of recorded outcomes"
dir=$1
[ -d "$dir" ] || usage "not a directory: $dir"
key=${LWIRC_WORK_KEY:-}
attempt=${LWIRC_ATTEMPT:-}
[ -n "$key" ] && [ -n "$attempt" ] || usage "LWIRC_WORK_KEY or LWIRC_ATTEMPT is not set: not run by lwirc"
case $key$attempt in
    */* | *..*) usage "unexpected work key: $key" ;;
esac

cat >/dev/null

for answer in "$dir/$key-$attempt.json" "$dir/$key.json"; do
    if [ -f "$answer" ]; then
        printf 'scripted.sh: %s attempt %s: replaying %s\n' "$key" "$attempt" "$answer" >&2
        exec cat -- "$answer"
    fi
done
printf 'scripted.sh: %s attempt %s: no recorded outcome\n' "$key" "$attempt" >&2
printf '{"kind":"failed","error":"scripted runner: no outcome recorded for attempt %s of %s"}\n' "$attempt" "$key"
