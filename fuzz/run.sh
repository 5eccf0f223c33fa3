#!/usr/bin/env bash
# Fuzzes every target (or the ones named) for SECONDS each, one after the other, on one
# core, on the stable toolchain (`cargo fuzz run -s none`, no sanitizer):
#
#   fuzz/run.sh 600                 # ten minutes each
#   fuzz/run.sh 60 reader canon     # a minute each for two targets
#
# Installs cargo-fuzz (pinned) if it is missing, builds the seed corpora (fuzz/seed.sh) and
# the targets, then fuzzes. Exits non-zero on the first crash; libFuzzer prints the input
# and saves it in fuzz/artifacts/<target>/. Minimize it with
# `cargo fuzz tmin -s none TARGET FILE` and keep it in fuzz/regressions/<target>/, which
# fuzz/replay.sh runs.
set -euo pipefail
cd "$(dirname "$0")"

seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(reader expr answer canon fixes goal lsp lsp_wire memo)

cargo_fuzz_version=0.13.1
if [ "$(cargo fuzz --version 2>/dev/null)" != "cargo-fuzz $cargo_fuzz_version" ]; then
    cargo install cargo-fuzz --version "$cargo_fuzz_version" --locked
fi
./seed.sh
# cargo fuzz has no --locked: check first that Cargo.lock needs no change.
cargo metadata --locked --format-version 1 > /dev/null
cargo fuzz build -s none
for target in "${targets[@]}"; do
    echo "== $target: fuzzing for ${seconds} s"
    cargo fuzz run -s none "$target" -- -max_total_time="$seconds" -max_len=32768 \
        -timeout=60 -rss_limit_mb=4096 -print_final_stats=1
done
