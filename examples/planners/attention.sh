#!/bin/sh
# EXAMPLE planner for lwirc (protocol lwir-planner/1, crates/lwir-spec/README.md section 8).
# It is not a real planner: it never drafts. Whatever it is asked, it answers `attention`,
# the answer a planner gives when it cannot help, which stops the repair loop at once
# (finding LW807). Useful to see how lwirc reports a planner that gives up:
#
#   lwirc compile examples/issue-triage/workflow.json --planner examples/planners/attention.sh
set -eu

# Read the whole request so that lwirc's write completes, then forget it.
cat >/dev/null

# The answer: one JSON object on standard output, exit status 0.
printf '%s\n' '{"kind":"attention","rationale":"attention.sh is an example planner that never drafts: use a real planner (crates/lwir-spec/README.md, section 8) or replay recorded answers with examples/planners/scripted.sh"}'
