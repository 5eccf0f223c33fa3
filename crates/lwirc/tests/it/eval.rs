//! `lwirc eval`: an expression's value as JSON, or where and why it has none.

use crate::common;

use common::*;

#[test]
fn eval_prints_the_value_as_json() {
    let dir = tempfile::tempdir().unwrap();
    let input = write_json(
        dir.path(),
        "input.json",
        &serde_json::json!({ "items": [{ "label": "bug" }, { "label": "feature" }] }),
    );
    let out = lwirc(
        dir.path(),
        &[
            "eval",
            "${ input.items.filter(i, i.label == 'bug').map(i, i.label + '!') }",
            "--input",
            &input,
        ],
    );
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "[\"bug!\"]\n");
    let work = write_json(dir.path(), "work.json", &serde_json::json!({ "n": 7 }));
    let out = lwirc(
        dir.path(),
        &["eval", "work.n / 2", "--var", &format!("work={work}")],
    );
    assert_exit(&out, 0);
    assert_eq!(stdout(&out), "3\n");
}

#[test]
fn an_expression_without_a_value_says_where() {
    let dir = tempfile::tempdir().unwrap();
    for (expr, says) in [
        ("1 + 1.0", "no such overload: _+_(int, double)"),
        ("9223372036854775807 + 1", "integer overflow"),
        ("input.x", "`.x` reads a field of a map, not of null"),
        ("1 +", "expected an expression"),
        ("1.0 / 0.0", "Infinity has no JSON form"),
    ] {
        let out = lwirc(dir.path(), &["eval", expr]);
        assert_exit(&out, 1);
        let err = stderr(&out);
        assert!(err.contains(says), "{expr}: {err}");
        assert!(err.contains('^'), "{expr}: {err}");
    }
    let out = lwirc(dir.path(), &["eval", "1", "--budget", "0"]);
    assert_exit(&out, 2);
    let out = lwirc(
        dir.path(),
        &["eval", "[1, 2, 3].map(x, x)", "--budget", "3"],
    );
    assert_exit(&out, 1);
    assert_stderr_has(&out, "cost budget");
}
