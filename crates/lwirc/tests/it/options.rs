//! Numeric options of `lwirc repair` and `lwirc compile`: every value outside the documented
//! range is a usage error (exit 2) naming the option and its range, before any planner call;
//! the ends of each range are accepted.

use crate::common;

use std::path::Path;

use common::*;

/// A planner that records that it was called, then gives up.
fn recording_planner(dir: &Path) -> String {
    script(
        dir,
        "planner.sh",
        &format!(
            "cat >/dev/null; echo called >> '{}'\n\
             echo '{{\"kind\":\"attention\",\"rationale\":\"no\"}}'",
            dir.join("called").display()
        ),
    )
}

/// `lwirc <subcommand> … <flag> <value>` on the example, in a fresh directory; returns the
/// output and whether the planner was called.
fn run(
    subcommand: &str,
    draft: &serde_json::Value,
    flag: &str,
    value: &str,
) -> (std::process::Output, bool) {
    let dir = tempfile::tempdir().unwrap();
    let definition = write_json(dir.path(), "workflow.json", &example_definition());
    let planner = recording_planner(dir.path());
    let draft = write_json(dir.path(), "draft.json", draft);
    let option = format!("{flag}={value}");
    let args: Vec<&str> = match subcommand {
        "repair" => vec![
            "repair",
            &draft,
            "-d",
            &definition,
            "--planner",
            &planner,
            &option,
        ],
        _ => vec![
            "compile",
            &definition,
            "--planner",
            &planner,
            "--registry",
            "registry",
            "--session",
            "session",
            &option,
        ],
    };
    let out = lwirc(dir.path(), &args);
    (out, dir.path().join("called").exists())
}

const OUT_OF_RANGE: &[(&str, &[&str], &str)] = &[
    (
        "--planner-timeout",
        &[
            "1e20", "0", "-1", "0.0001", "86401", "nan", "inf", "-inf", "5s", "",
        ],
        "0.001 to 86400",
    ),
    (
        "--planner-max-output",
        &[
            "0",
            "-1",
            "1073741825",
            "18446744073709551616",
            "1e6",
            "16MiB",
        ],
        "1 to 1073741824",
    ),
    (
        "--max-attempts",
        &["-1", "1001", "4294967296", "1.5"],
        "0 to 1000",
    ),
    (
        "--max-planner-calls",
        &["-1", "1001", "99999999999999999999"],
        "0 to 1000",
    ),
];

#[test]
fn out_of_range_numbers_are_usage_errors_before_any_planner_call() {
    for subcommand in ["repair", "compile"] {
        for (flag, values, range) in OUT_OF_RANGE {
            for value in *values {
                let (out, called) = run(subcommand, &example_draft(), flag, value);
                let err = stderr(&out);
                assert_eq!(
                    out.status.code(),
                    Some(2),
                    "{subcommand} {flag}={value}: {err}"
                );
                assert!(
                    err.contains(flag) && err.contains(range),
                    "{subcommand} {flag}={value}: {err}"
                );
                assert!(!err.contains("panicked"), "{err}");
                assert!(
                    !called,
                    "{subcommand} {flag}={value}: the planner was called"
                );
            }
        }
    }
}

#[test]
fn the_ends_of_each_range_are_accepted() {
    // The clean example draft converges without a planner call, whatever the bounds.
    for (flag, value) in [
        ("--planner-timeout", "0.001"),
        ("--planner-timeout", "86400"),
        ("--planner-timeout", "1e2"),
        ("--planner-max-output", "1"),
        ("--planner-max-output", "1073741824"),
        ("--max-attempts", "0"),
        ("--max-attempts", "1000"),
        ("--max-planner-calls", "0"),
        ("--max-planner-calls", "1000"),
    ] {
        let (out, called) = run("repair", &example_draft(), flag, value);
        assert_exit(&out, 0);
        assert!(!called, "{flag}={value}");
    }
}

#[test]
fn help_states_each_range() {
    for subcommand in ["repair", "compile"] {
        let dir = tempfile::tempdir().unwrap();
        let out = lwirc(dir.path(), &[subcommand, "--help"]);
        assert_exit(&out, 0);
        let help = stdout(&out);
        for (flag, _, range) in OUT_OF_RANGE {
            let at = help
                .find(&format!("{flag} <"))
                .unwrap_or_else(|| panic!("{flag} in {help}"));
            let entry = &help[at..];
            let entry = &entry[..entry[2..].find("\n  -").map_or(entry.len(), |n| n + 2)];
            assert!(entry.contains(range), "{subcommand} {flag}: {entry}");
        }
    }
}
