//! Peak memory of whole `lwirc` processes — `hash`, `canon` and `validate` — on generated
//! documents of three shapes, as a multiple of the input size.
//!
//! Run with `cargo bench -p lwirc --bench memory` (the documents are about 100 MB each;
//! `LWIRC_MEMORY_MB=N` sets another size). Each command runs once, as its own process, on a
//! file written to a temporary directory; its peak resident set comes from `wait4`'s
//! `ru_maxrss`. Nothing is asserted: this prints a table to read, not a test to pass.
//!
//! `LWIRC_MEMORY_BIN=PATH` adds a column for another `lwirc` executable (an older build,
//! say), run on the same files in the same run. `LWIRC_MEMORY_KEEP=DIR` writes the
//! documents into `DIR` and leaves them there (to profile one command on them, say).
//!
//! The shapes:
//! - `draft`: a generated workflow draft of tool calls, model calls and maps (the
//!   `validate` benchmark's), validated against the generated definition it is clean for;
//! - `string`: a one-step issue-triage draft whose one argument is a single huge string
//!   (with some escapes and non-ASCII text), validated against the issue-triage definition;
//! - `numbers`: an array of one-digit numbers (a tree node for every two bytes of input),
//!   validated against the issue-triage definition (which it fails: it is not a draft).

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

mod generated;

/// The draft of the `validate` benchmark, with enough steps to be about `target` bytes.
fn draft_document(target: usize) -> (Vec<u8>, Vec<u8>) {
    // A step is about 400 bytes pretty-printed; measure on a small draft and scale.
    let per_step = generated::draft(1_000).len() / 1_000;
    let steps = (target / per_step).max(1);
    (generated::draft(steps), generated::definition(steps))
}

/// A one-step issue-triage draft whose `repo` argument is one string of about `target` bytes.
fn string_document(target: usize) -> Vec<u8> {
    let head = br#"{"lwir":"1","workflow":"issue-triage","steps":[{"id":"issues","kind":"tool.call","tool":"github.list_issues","args":{"state":"open","repo":""#;
    let tail = br#""}}]}"#;
    let chunk =
        "owner/repository name with text \u{e9}t\u{e9} \u{2713} \\n\\t\\\"quoted\\\" \\u00e9 ";
    let mut out = Vec::with_capacity(target + chunk.len() + head.len() + tail.len());
    out.extend_from_slice(head);
    while out.len() < target {
        out.extend_from_slice(chunk.as_bytes());
    }
    out.extend_from_slice(tail);
    out
}

/// An array of about `target` bytes of one-digit numbers: `[0,1,2,…,9,0,…]`.
fn numbers_document(target: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(target + 2);
    out.push(b'[');
    let mut digit = 0u8;
    while out.len() < target {
        if out.len() > 1 {
            out.push(b',');
        }
        out.push(b'0' + digit);
        digit = (digit + 1) % 10;
    }
    out.push(b']');
    out
}

/// Runs `lwirc args…` (the executable `lwirc`) with its output discarded; its peak resident
/// set in bytes, and its exit status.
///
/// Linux carries a process's peak resident set across `exec`, so a child spawned straight
/// from this process (which holds the generated documents) would report this process's peak.
/// The measurement runs from a fresh, small copy of this executable instead
/// ([`measure_child`]), which spawns `lwirc` and prints what `wait4` says.
fn peak_rss(lwirc: &OsStr, args: &[&OsStr]) -> (u64, i32) {
    let out = Command::new(std::env::current_exe().expect("the bench executable"))
        .env(MEASURE, "1")
        .arg(lwirc)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .expect("the measuring process runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let mut fields = text
        .split_whitespace()
        .map(|f| f.parse::<i64>().unwrap_or(-1));
    let peak = fields.next().unwrap_or(-1);
    let code = fields.next().unwrap_or(-1);
    (
        u64::try_from(peak).unwrap_or(0),
        i32::try_from(code).unwrap_or(-1),
    )
}

/// The environment variable that makes this executable measure one command.
const MEASURE: &str = "LWIRC_MEMORY_MEASURE";

/// In the measuring process: runs `argv[1] argv[2…]` with its output discarded and prints
/// its peak resident set in bytes and its exit status.
fn measure_child() {
    let args: Vec<_> = std::env::args_os().skip(1).collect();
    #[allow(clippy::zombie_processes, reason = "wait4 below reaps it")]
    let child = Command::new(&args[0])
        .args(&args[1..])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("lwirc starts");
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    let mut status = 0;
    // SAFETY: `rusage` is plain data; wait4 fills it for our own child, which it reaps
    // (`child` is never waited on or killed after this).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid, "wait4: {}", std::io::Error::last_os_error());
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    // Linux reports ru_maxrss in KiB.
    println!("{} {code}", usage.ru_maxrss * 1024);
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn main() {
    if std::env::var_os(MEASURE).is_some() {
        measure_child();
        return;
    }
    // `cargo bench` passes `--bench`; a filter, if any, selects shapes by name.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let target = std::env::var("LWIRC_MEMORY_MB")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(100)
        << 20;
    let lwirc = OsStr::new(env!("CARGO_BIN_EXE_lwirc"));
    let other = std::env::var_os("LWIRC_MEMORY_BIN");
    let temporary = tempfile::tempdir().expect("a temporary directory");
    let dir = match std::env::var_os("LWIRC_MEMORY_KEEP") {
        Some(keep) => {
            fs::create_dir_all(&keep).expect("the LWIRC_MEMORY_KEEP directory");
            std::path::PathBuf::from(keep)
        }
        None => temporary.path().to_owned(),
    };
    let triage =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/issue-triage/workflow.json");

    // The baseline: the binary's own resident set on a tiny document.
    let tiny = dir.join("tiny.json");
    fs::write(&tiny, b"{}").unwrap();
    let (baseline, _) = peak_rss(lwirc, &[OsStr::new("hash"), tiny.as_os_str()]);
    println!(
        "lwirc peak RSS on `{{}}`: {:.1} MiB (included in every figure below)",
        mib(baseline)
    );
    println!();
    if other.is_some() {
        println!(
            "| command | document | size | other: peak RSS | peak ÷ size | this: peak RSS | peak ÷ size | exit |"
        );
        println!("|---|---|---:|---:|---:|---:|---:|---:|");
    } else {
        println!("| command | document | size | peak RSS | peak ÷ size | exit |");
        println!("|---|---|---:|---:|---:|---:|");
    }

    type Make = fn(usize) -> (Vec<u8>, Option<Vec<u8>>);
    let shapes: [(&str, Make); 3] = [
        ("draft", |t| {
            let (d, def) = draft_document(t);
            (d, Some(def))
        }),
        ("string", |t| (string_document(t), None)),
        ("numbers", |t| (numbers_document(t), None)),
    ];
    for (name, make) in shapes {
        if !filter.is_empty() && !filter.iter().any(|f| name.contains(f.as_str())) {
            continue;
        }
        let (bytes, definition) = make(target);
        let file = dir.join(format!("{name}.json"));
        fs::File::create(&file)
            .and_then(|mut f| f.write_all(&bytes))
            .expect("the document is written");
        let definition = match definition {
            Some(def) => {
                let path = dir.join(format!("{name}-workflow.json"));
                fs::write(&path, def).expect("the definition is written");
                path
            }
            None => triage.clone(),
        };
        let size = bytes.len() as u64;
        drop(bytes);
        let runs: [(&str, Vec<&OsStr>); 3] = [
            ("hash", vec![OsStr::new("hash"), file.as_os_str()]),
            ("canon", vec![OsStr::new("canon"), file.as_os_str()]),
            (
                "validate",
                vec![
                    OsStr::new("validate"),
                    file.as_os_str(),
                    OsStr::new("-d"),
                    definition.as_os_str(),
                    OsStr::new("--format"),
                    OsStr::new("json"),
                ],
            ),
        ];
        for (command, args) in runs {
            let (peak, code) = peak_rss(lwirc, &args);
            let mut row = format!("| `{command}` | {name} | {:.1} MiB |", mib(size));
            if let Some(other) = &other {
                let (peak, _) = peak_rss(other, &args);
                row += &format!(
                    " {:.1} MiB | {:.2}× |",
                    mib(peak),
                    peak as f64 / size as f64
                );
            }
            row += &format!(
                " {:.1} MiB | {:.2}× | {code} |",
                mib(peak),
                peak as f64 / size as f64
            );
            println!("{row}");
        }
    }
}
