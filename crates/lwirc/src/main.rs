//! The `lwirc` command line (src/lib.rs): parses arguments, calls the library, maps outcomes
//! to exit codes.

use std::process::ExitCode;

/// A validate allocates and frees many small objects (expression trees, types, strings):
/// mimalloc does that in far fewer instructions than the system allocator (issue 28). Its
/// v2 line, not v3: v3 commits about a third more memory for a short command (31.7 against
/// 24 MiB for a `goal show` of 1 000 items), which the kernel zeroes page by page, and was
/// slower on every command measured (`goal show` 9.5 against 9.0 ms, a 10 000-step
/// `validate` 65 against 60 ms, 100 000 steps 0.84–1.15 against 0.64 s).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(lwirc::main_with(std::env::args_os()))
}
