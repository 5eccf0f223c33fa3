//! Writes a generated document for the whole-process comparison (`benches/compare.sh`):
//!
//! ```text
//! cargo run --release --example generate -- draft STEPS > draft.json
//! cargo run --release --example generate -- definition STEPS > workflow.json
//! cargo run --release --example generate -- real-draft STEPS > draft.json
//! cargo run --release --example generate -- real-definition STEPS > workflow.json
//! cargo run --release --example generate -- parse FILE      # serde_json::from_slice, for timing
//! ```
//!
//! The drafts are the benchmarks' (`benches/generated`): clean, every kind of step, each
//! after the one before. `draft` is the plain-path shape (interpolations such as
//! `${ input.repo }`); `real-draft` has expressions like the ones planners write (macros with
//! lambdas, `size()`, ternaries, arithmetic, several interpolations per template), checked
//! against `real-definition`.

use std::io::Write;

#[path = "../benches/generated/mod.rs"]
mod generated;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = || -> ! {
        eprintln!(
            "usage: generate draft|definition|real-draft|real-definition STEPS  |  generate parse FILE"
        );
        std::process::exit(2)
    };
    let (Some(what), Some(arg)) = (args.first(), args.get(1)) else {
        usage()
    };
    let bytes = match what.as_str() {
        "draft" => generated::draft(arg.parse().unwrap_or_else(|_| usage())),
        "definition" => generated::definition(arg.parse().unwrap_or_else(|_| usage())),
        "real-draft" => generated::real_draft(arg.parse().unwrap_or_else(|_| usage())),
        "real-definition" => generated::real_definition(arg.parse().unwrap_or_else(|_| usage())),
        "parse" => {
            let bytes = std::fs::read(arg).unwrap_or_else(|e| {
                eprintln!("generate: cannot read {arg}: {e}");
                std::process::exit(2)
            });
            // What a user checking the file with serde_json alone pays: a parse into a
            // value, kept until the end.
            let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                eprintln!("generate: {arg} is not JSON: {e}");
                std::process::exit(1)
            });
            std::hint::black_box(&value);
            return;
        }
        _ => usage(),
    };
    std::io::stdout().lock().write_all(&bytes).unwrap();
}
