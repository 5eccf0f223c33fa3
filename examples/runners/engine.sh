#!/bin/sh
# SKETCH of a runner that hands the registered version to a real workflow engine. It is not
# run by the tests: `my-engine` stands for your engine's command line. Needs `jq`.
#
#   lwirc goal run GOAL --runner 'examples/runners/engine.sh'
#
# The request (lwir-runner/1) carries the registered LWIR of the work item's version
# (`.lwir`, verified by lwirc against its digest) and its resolved input (`.work.input`).
# The engine runs the LWIR with that input; the runner answers with its output, or with the
# error. Logs go to standard error; standard output is for the answer only.
set -eu

request=$(mktemp)
trap 'rm -f "$request" "$request.lwir" "$request.input" "$request.out"' EXIT
cat > "$request"
jq '.lwir' "$request" > "$request.lwir"
jq '.work.input' "$request" > "$request.input"
version=$(jq -r '.work.version' "$request")
echo "engine.sh: running $(jq -r '.work.key' "$request") on $version" >&2

if my-engine run --workflow "$request.lwir" --input "$request.input" > "$request.out" 2>&2; then
    jq -c '{kind: "succeeded", output: .}' "$request.out"
else
    status=$?
    jq -cn --arg error "the engine exited with status $status" '{kind: "failed", error: $error}'
fi
