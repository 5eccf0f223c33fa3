//! The `lwirc` command line (src/lib.rs): parses arguments, calls the library, maps outcomes
//! to exit codes.

use std::process::ExitCode;

/// A validate allocates and frees many small objects (expression trees, types, strings):
/// mimalloc does that in far fewer instructions than the system allocator (issue 28).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(lwirc::main_with(std::env::args_os()))
}
