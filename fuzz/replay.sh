#!/usr/bin/env bash
# Runs every saved crash input, fuzz/regressions/<target>/*, through its target once (no
# fuzzing); exits non-zero if any still crashes. Run it after fixing a crash:
#
#   fuzz/replay.sh            # every target
#   fuzz/replay.sh expr       # one
set -euo pipefail
cd "$(dirname "$0")"

targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(reader expr answer canon fixes goal lsp lsp_wire memo)

cargo_fuzz_version=0.13.1
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $cargo_fuzz_version" ]; then
    cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked
fi
cargo metadata --locked --format-version 1 > /dev/null
cargo fuzz build -s none
status=0
for target in "${targets[@]}"; do
    shopt -s nullglob
    saved=(regressions/"$target"/*)
    shopt -u nullglob
    for input in "${saved[@]}"; do
        if cargo fuzz run -s none "$target" "$input" -- -timeout=60 > /dev/null 2>&1; then
            echo "ok      $target $input"
        else
            echo "CRASHES $target $input"
            status=1
        fi
    done
done
exit $status
