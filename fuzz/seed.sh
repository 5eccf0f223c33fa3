#!/usr/bin/env bash
# Builds the seed corpora, fuzz/corpus/<target>/, from the repository's fixtures
# (crates/lwir-corpus/cases/**, examples/**) and the small hand-written seeds in fuzz/seeds/.
# Files already in a corpus (inputs found by earlier runs) are kept.
set -euo pipefail
fuzz=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$fuzz")
corpus="$fuzz/corpus"
max=32768 # the targets' -max_len; larger fixtures would only be cut

# put TARGET FILE: copies FILE into TARGET's corpus, named by its content.
put() {
    local dir="$corpus/$1"
    mkdir -p "$dir"
    cp "$2" "$dir/$(sha1sum < "$2" | cut -c1-40)"
}

mapfile -t fixtures < <(cd "$root" && find crates/lwir-corpus/cases examples -type f -name '*.json' -size -"$max"c | sort)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

for f in "${fixtures[@]}"; do
    for target in reader canon fixes lsp; do
        put "$target" "$root/$f"
    done
    # A planner's answer carrying the fixture as its draft.
    { printf '{"kind":"draft","model":"seed","lwir":'; cat "$root/$f"; printf '}\n'; } > "$scratch/answer"
    put answer "$scratch/answer"
    # The fixture as the body of a frame an editor writes to `lwirc lsp`.
    { printf 'Content-Length: %d\r\n\r\n' "$(wc -c < "$root/$f")"; cat "$root/$f"; } > "$scratch/frame"
    put lsp_wire "$scratch/frame"
    # The fixture after an edit: a letter typed at byte 64 (see fuzz_targets/memo.rs).
    { printf '\x40\x00x\x00'; cat "$root/$f"; } > "$scratch/memo"
    put memo "$scratch/memo"
done
for f in "$root"/examples/issue-triage/planner/*.json; do
    put answer "$f"
done

# Every string with an interpolation in the fixtures, as the expression parser sees it
# (still JSON-escaped, which is close enough for a seed), and with `${ }` taken off.
while IFS= read -r s; do
    printf '%s' "$s" > "$scratch/expr"
    put expr "$scratch/expr"
    inner=${s#*'${'}
    printf '%s' "${inner%\}*}" > "$scratch/expr"
    put expr "$scratch/expr"
done < <(cd "$root" && grep -rhoE '"[^"]*\$\{[^"]*"' crates/lwir-corpus/cases examples | sed 's/^"//; s/"$//' | sort -u)

# Goal files and proposals: the goal corpus and the goal example.
while IFS= read -r f; do
    put goal "$root/$f"
done < <(cd "$root" && find crates/lwir-goals/tests/corpus examples/goals -type f -name '*.json' -size -"$max"c | sort)

for target_dir in "$fuzz"/seeds/*/; do
    target=$(basename "$target_dir")
    for f in "$target_dir"*; do
        [ -f "$f" ] && put "$target" "$f"
    done
done

for target in reader expr answer canon fixes goal lsp lsp_wire; do
    echo "corpus/$target: $(find "$corpus/$target" -type f | wc -l) inputs"
done
