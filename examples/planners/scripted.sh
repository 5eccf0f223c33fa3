#!/bin/sh
# EXAMPLE planner for lwirc (protocol lwir-planner/1, crates/lwir-spec/README.md section 8).
# It is not a real planner: it calls no model. It replays a directory of recorded answers,
# for tests and demos:
#
#   lwirc compile examples/issue-triage/workflow.json \
#       --planner 'examples/planners/scripted.sh examples/issue-triage/planner'
#
# For planner call N (LWIRC_PLANNER_CALL, set by lwirc) it prints DIR/call-N.json verbatim
# as the answer. When no answer is recorded for call N, it answers `attention`, which stops
# the repair loop. The request on standard input is read and discarded.
#
# Usage: scripted.sh DIR      (run by lwirc; exit 2 on a usage error)
set -eu

usage() {
    printf 'scripted.sh: %s\n' "$1" >&2
    printf 'usage: scripted.sh DIR   (an example planner, run by lwirc --planner)\n' >&2
    exit 2
}

[ "$#" -eq 1 ] || usage "expected one argument, the directory of recorded answers"
dir=$1
[ -d "$dir" ] || usage "not a directory: $dir"
call=${LWIRC_PLANNER_CALL:-}
[ -n "$call" ] || usage "LWIRC_PLANNER_CALL is not set: not run by lwirc"
case $call in
    *[!0-9]*) usage "LWIRC_PLANNER_CALL is not a number: $call" ;;
esac

# Read the whole request so that lwirc's write completes, then forget it.
cat >/dev/null

answer="$dir/call-$call.json"
if [ -f "$answer" ]; then
    # Logs go to standard error; standard output is for the answer only.
    printf 'scripted.sh: call %s (%s): replaying %s\n' "$call" "${LWIRC_PLANNER_KIND:-?}" "$answer" >&2
    exec cat -- "$answer"
fi
printf 'scripted.sh: call %s: no %s, answering attention\n' "$call" "$answer" >&2

# No recorded answer: give up. DIR is JSON-escaped minimally (backslash and quote); a
# name with other special characters is left out of the rationale.
case $dir in
    *[![:print:]]*) where="the answers directory" ;;
    *) where=$(printf '%s' "$dir" | sed 's/[\\"]/\\&/g') ;;
esac
printf '{"kind":"attention","rationale":"scripted planner: no answer recorded for call %s in %s"}\n' \
    "$call" "$where"
