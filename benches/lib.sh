# Sourced by the benches (from the repository's root): what they share.

# Builds lwirc, release unless PROFILE=dev, and sets `lwirc` to the binary's absolute path.
build_lwirc() {
    if [ "${PROFILE:-release}" = release ]; then
        cargo build --release --locked -q --bin lwirc
        lwirc=${CARGO_TARGET_DIR:-target}/release/lwirc
    else
        cargo build --locked -q --bin lwirc
        lwirc=${CARGO_TARGET_DIR:-target}/debug/lwirc
    fi
    lwirc=$(realpath "$lwirc")
}

# Times are read from bash's clock, $EPOCHREALTIME (no `date` process inside what is timed,
# which costs a millisecond or two: as much as a short command), with the C locale's
# decimal point.
LC_NUMERIC=C
