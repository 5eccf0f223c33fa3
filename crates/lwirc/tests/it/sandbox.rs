//! `lwirc sandbox check`: exit 1 naming the package to install where bubblewrap is not on
//! PATH; exit 0 and the report where the sandbox runs. Without bubblewrap the second test
//! says it is skipped, unless `LWIRC_REQUIRE_ENGINES` is set (CI sets it).

use crate::common;

use common::*;

#[test]
fn without_bubblewrap_on_path_check_exits_1_naming_the_package() {
    let dir = tempfile::tempdir().unwrap();
    let out = command(dir.path(), &["sandbox", "check"])
        .env("PATH", "/nonexistent")
        .output()
        .unwrap();
    assert_exit(&out, 1);
    assert_eq!(stdout(&out), "bubblewrap    not found on PATH\n");
    let err = stderr(&out);
    assert!(err.contains("nothing runs unconfined instead"), "{err}");
    assert!(err.contains("apt-get install bubblewrap"), "{err}");
}

#[test]
fn where_the_sandbox_runs_check_says_how() {
    let require = std::env::var_os("LWIRC_REQUIRE_ENGINES").is_some();
    let dir = tempfile::tempdir().unwrap();
    let out = lwirc(dir.path(), &["sandbox", "check"]);
    if out.status.code() == Some(1) && !require {
        skip_note!(
            "skipped `lwirc sandbox check` where the sandbox runs: {}",
            stderr(&out).trim()
        );
        return;
    }
    assert_exit(&out, 0);
    let report = stdout(&out);
    let names: Vec<&str> = report
        .lines()
        .map(|l| l.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(
        names,
        [
            "bubblewrap",
            "namespaces",
            "processes",
            "memory",
            "bash",
            "python3",
            "node",
            "The"
        ],
        "{report}"
    );
    assert!(report.contains("bubblewrap    /"), "{report}");
    assert!(report.contains("\nbash          /"), "{report}");
    assert!(
        report.ends_with("The sandbox runs commands here.\n"),
        "{report}"
    );
}
