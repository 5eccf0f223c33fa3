//! The `lwirc` command line (src/lib.rs): parses arguments, calls the library, maps outcomes
//! to exit codes.

use std::process::ExitCode;

fn main() -> ExitCode {
    ExitCode::from(lwirc::main_with(std::env::args_os()))
}
