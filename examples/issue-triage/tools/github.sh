#!/bin/sh
# EXAMPLE command tool for `lwirc run` (crates/lwir-spec/README.md, "Running versions"). It
# answers the two GitHub tools of examples/issue-triage/workflow.json from canned data,
# without a network, for demos and tests:
#
#   lwirc run VERSION --input examples/issue-triage/input.json \
#                     --bindings examples/issue-triage/bindings.json
#
# lwirc writes {"tool", "args", "idempotency_key"} on standard input; the result is printed
# on standard output. Exit 2 on a tool it does not know.
set -eu

request=$(cat)
case $request in
    *'"tool":"github.list_issues"'*)
        printf '%s\n' '{"items":[{"number":1,"title":"Crash when saving"},{"number":2,"title":"Add dark mode"},{"number":3,"title":"How do I export my data?"}]}'
        ;;
    *'"tool":"github.add_label"'*)
        printf '%s\n' '{"ok":true}'
        ;;
    *)
        printf 'github.sh: not a tool this example knows\n' >&2
        exit 2
        ;;
esac
