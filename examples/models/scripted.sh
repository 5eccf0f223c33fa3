#!/bin/sh
# EXAMPLE command model for `lwirc run` (crates/lwir-spec/README.md, "Running versions"): it
# answers without a model server, by rules on the prompt, for demos and tests. lwirc writes
# the chat request (model, messages, response_format) on standard input; the answer is
# printed on standard output.
#
#   "models": { "*": { "command": ["examples/models/scripted.sh"] } }
#
# A prompt "Classify issue #N: TITLE" is answered {"label": …} (bug for a crash or an error,
# feature for an addition, else question); a prompt "Summarise: TEXT" {"summary": "TEXT"}.
set -eu

request=$(cat)
prompt=$(printf '%s' "$request" | sed -n 's/.*"content":"\([^"]*\)","role":"user".*/\1/p')
case $prompt in
    'Classify issue'*)
        case $prompt in
            *[Cc]rash* | *[Ee]rror* | *[Ff]ail*) label=bug ;;
            *[Aa]dd* | *[Ss]upport*) label=feature ;;
            *) label=question ;;
        esac
        printf '{"label":"%s"}\n' "$label"
        ;;
    'Summarise: '*)
        printf '{"summary":"%s"}\n' "${prompt#Summarise: }"
        ;;
    *)
        printf 'scripted.sh: no rule for this prompt\n' >&2
        exit 2
        ;;
esac
